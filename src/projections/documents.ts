import { idOfStream, streamOf } from '../domain/streams.js';
import { DOCUMENT_EVENT_TYPES, evolve, toDocumentEvent, type Document } from '../domain/documents/index.js';
import type { Queryable } from '../storage/postgres.js';
import { loadStates, newAndStored, noRow, type FoldedRow, type FoldProjection, type FoldWriter } from './fold.js';

const RECEIVED = 'document.received';

/** The `documents` read model: each document as the public Document. */
export const documentsProjection: FoldProjection<Document> = {
  name: 'documents',
  tables: ['documents'],
  eventTypes: DOCUMENT_EVENT_TYPES,
  // The read model is of document streams: an event of a document kind appended elsewhere (the webhook suites
  // append made-up deliveries of these kinds) is not a document's.
  rowOf: (event) =>
    streamOf(event.streamId)?.kind === 'document' ? idOfStream('document', event.streamId) : undefined,
  creates: (event) => event.type === RECEIVED,
  replaces: (event) => event.type === RECEIVED,
  load: (sql, rows) => loadStates<Document>(sql, 'documents', 'body', rows),
  evolve(state, event) {
    if (state === undefined && event.type !== RECEIVED) throw noRow(event);
    return evolve(state, toDocumentEvent(event));
  },
  write(sql: FoldWriter, rows: readonly FoldedRow<Document>[]): void {
    const { inserts, updates } = newAndStored(rows);
    if (inserts.length > 0)
      sql.send(
        `INSERT INTO documents (id, tenant_id, sandbox, lead_id, application_id, status, body, revision, created_at, updated_at)
         SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::boolean[], $4::uuid[], $5::uuid[], $6::text[], $7::jsonb[],
                              $8::integer[], $9::timestamptz[], $10::timestamptz[])`,
        [
          inserts.map((r) => r.state.id),
          inserts.map((r) => r.tenantId),
          inserts.map((r) => r.sandbox),
          inserts.map((r) => r.state.lead_id),
          inserts.map((r) => r.state.application_id),
          inserts.map((r) => r.state.status),
          inserts.map((r) => JSON.stringify(r.state)),
          inserts.map((r) => r.revision),
          inserts.map((r) => r.firstAt),
          inserts.map((r) => r.lastAt),
        ],
        inserts,
      );
    if (updates.length > 0)
      sql.send(
        `UPDATE documents AS d SET status = v.status, body = v.body, revision = v.revision, updated_at = v.updated_at
           FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::jsonb[], $5::integer[], $6::timestamptz[])
                AS v(id, tenant_id, status, body, revision, updated_at)
          WHERE d.id = v.id AND d.tenant_id = v.tenant_id`,
        [
          updates.map((r) => r.id),
          updates.map((r) => r.tenantId),
          updates.map((r) => r.state.status),
          updates.map((r) => JSON.stringify(r.state)),
          updates.map((r) => r.revision),
          updates.map((r) => r.lastAt),
        ],
        updates,
      );
  },
};

/** One document of a tenant in one mode; undefined for another tenant's, the other mode's or an unknown id. */
export async function findDocument(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  id: string,
): Promise<Document | undefined> {
  const result = await sql.query<{ body: Document }>(
    'SELECT body FROM documents WHERE id = $1 AND tenant_id = $2 AND sandbox = $3',
    [id, tenantId, sandbox],
  );
  return result.rows[0]?.body;
}

/** The documents of a lead or an application (or all), oldest first; 500 at most. */
export async function listDocuments(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  subject: { lead_id?: string | undefined; application_id?: string | undefined },
): Promise<Document[]> {
  const result = await sql.query<{ body: Document }>(
    `SELECT body FROM documents
      WHERE tenant_id = $1 AND sandbox = $2
        AND ($3::uuid IS NULL OR lead_id = $3) AND ($4::uuid IS NULL OR application_id = $4)
      ORDER BY created_at, id LIMIT 500`,
    [tenantId, sandbox, subject.lead_id ?? null, subject.application_id ?? null],
  );
  return result.rows.map((r) => r.body);
}

/** Documents waiting for their virus scan, oldest first. */
export async function pendingScans(
  sql: Queryable,
  limit: number,
): Promise<{ id: string; tenant_id: string; sandbox: boolean }[]> {
  const result = await sql.query<{ id: string; tenant_id: string; sandbox: boolean }>(
    `SELECT id, tenant_id, sandbox FROM documents WHERE status = 'pending_scan' ORDER BY created_at, id LIMIT $1`,
    [limit],
  );
  return result.rows;
}
