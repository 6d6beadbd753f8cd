import { idOfStream } from '../domain/streams.js';
import { INVOICE_EVENT_TYPES, evolve, toInvoiceEvent, type Invoice } from '../domain/invoices/index.js';
import type { Queryable } from '../storage/postgres.js';
import { loadStates, newAndStored, noRow, type FoldedRow, type FoldProjection, type FoldWriter } from './fold.js';

const ISSUED = 'invoice.issued';

/** The `invoices` read model: each invoice as the public Invoice (payments and refunds included). */
export const invoicesProjection: FoldProjection<Invoice> = {
  name: 'invoices',
  tables: ['invoices'],
  eventTypes: INVOICE_EVENT_TYPES,
  rowOf: (event) => idOfStream('invoice', event.streamId),
  creates: (event) => event.type === ISSUED,
  replaces: (event) => event.type === ISSUED,
  load: (sql, rows) => loadStates<Invoice>(sql, 'invoices', 'body', rows),
  evolve(state, event) {
    if (state === undefined && event.type !== ISSUED) throw noRow(event);
    return evolve(state, toInvoiceEvent(event));
  },
  write(sql: FoldWriter, rows: readonly FoldedRow<Invoice>[]): void {
    const { inserts, updates } = newAndStored(rows);
    if (inserts.length > 0)
      sql.send(
        `INSERT INTO invoices (id, tenant_id, sandbox, number, lead_id, application_id, body, revision, created_at, updated_at)
         SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::boolean[], $4::text[], $5::uuid[], $6::uuid[], $7::jsonb[],
                              $8::integer[], $9::timestamptz[], $10::timestamptz[])`,
        [
          inserts.map((r) => r.state.id),
          inserts.map((r) => r.tenantId),
          inserts.map((r) => r.sandbox),
          inserts.map((r) => r.state.number),
          inserts.map((r) => r.state.lead_id),
          inserts.map((r) => r.state.application_id),
          inserts.map((r) => JSON.stringify(r.state)),
          inserts.map((r) => r.revision),
          inserts.map((r) => r.firstAt),
          inserts.map((r) => r.lastAt),
        ],
        inserts,
      );
    if (updates.length > 0)
      sql.send(
        `UPDATE invoices AS i SET body = v.body, revision = v.revision, updated_at = v.updated_at
           FROM unnest($1::uuid[], $2::uuid[], $3::jsonb[], $4::integer[], $5::timestamptz[])
                AS v(id, tenant_id, body, revision, updated_at)
          WHERE i.id = v.id AND i.tenant_id = v.tenant_id`,
        [
          updates.map((r) => r.id),
          updates.map((r) => r.tenantId),
          updates.map((r) => JSON.stringify(r.state)),
          updates.map((r) => r.revision),
          updates.map((r) => r.lastAt),
        ],
        updates,
      );
  },
};

/** One invoice of a tenant in one mode; undefined for another tenant's, the other mode's or an unknown id. */
export async function findInvoice(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  id: string,
): Promise<Invoice | undefined> {
  const result = await sql.query<{ body: Invoice }>(
    'SELECT body FROM invoices WHERE id = $1 AND tenant_id = $2 AND sandbox = $3',
    [id, tenantId, sandbox],
  );
  return result.rows[0]?.body;
}

/** The invoices of a lead or an application (or all), newest first, at most 500. */
export async function listInvoices(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  subject: { lead_id?: string; application_id?: string },
): Promise<Invoice[]> {
  const result = await sql.query<{ body: Invoice }>(
    `SELECT body FROM invoices
      WHERE tenant_id = $1 AND sandbox = $2
        AND ($3::uuid IS NULL OR lead_id = $3) AND ($4::uuid IS NULL OR application_id = $4)
      ORDER BY created_at DESC, id DESC LIMIT 500`,
    [tenantId, sandbox, subject.lead_id ?? null, subject.application_id ?? null],
  );
  return result.rows.map((r) => r.body);
}
