import { idOfStream } from '../domain/streams.js';
import { INVOICE_EVENT_TYPES, evolve, toInvoiceEvent, type Invoice } from '../domain/invoices/index.js';
import type { RecordedEvent } from '../events/types.js';
import type { Queryable, Writer } from '../storage/postgres.js';
import type { Projection } from './projection.js';

/** The `invoices` read model: each invoice as the public Invoice (payments and refunds included). */
export const invoicesProjection: Projection = {
  name: 'invoices',
  tables: ['invoices'],
  eventTypes: INVOICE_EVENT_TYPES,
  async apply(sql: Writer, stored: RecordedEvent): Promise<void> {
    const event = toInvoiceEvent(stored);
    if (event.type === 'invoice.issued') {
      const invoice = evolve(undefined, event);
      sql.send(
        `INSERT INTO invoices (id, tenant_id, sandbox, number, lead_id, application_id, body, revision, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
        [
          invoice.id,
          stored.tenantId,
          stored.sandbox,
          invoice.number,
          invoice.lead_id,
          invoice.application_id,
          JSON.stringify(invoice),
          stored.revision,
          stored.createdAt,
        ],
      );
      return;
    }
    const id = idOfStream('invoice', stored.streamId);
    const row = (
      await sql.query<{ body: Invoice }>('SELECT body FROM invoices WHERE id = $1 AND tenant_id = $2 FOR UPDATE', [
        id,
        stored.tenantId,
      ])
    ).rows[0];
    if (!row) throw new Error(`No read-model row for ${stored.streamId}`);
    const invoice = evolve(row.body, event);
    sql.send('UPDATE invoices SET body = $2, revision = $3, updated_at = $4 WHERE id = $1 AND tenant_id = $5', [
      id,
      JSON.stringify(invoice),
      stored.revision,
      stored.createdAt,
      stored.tenantId,
    ]);
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
