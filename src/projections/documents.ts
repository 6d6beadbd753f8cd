import { idOfStream, streamOf } from '../domain/streams.js';
import { DOCUMENT_EVENT_TYPES, evolve, toDocumentEvent, type Document } from '../domain/documents/index.js';
import type { RecordedEvent } from '../events/types.js';
import type { Queryable, Writer } from '../storage/postgres.js';
import type { Projection } from './projection.js';

/** The `documents` read model: each document as the public Document. */
export const documentsProjection: Projection = {
  name: 'documents',
  tables: ['documents'],
  eventTypes: DOCUMENT_EVENT_TYPES,
  async apply(sql: Writer, stored: RecordedEvent): Promise<void> {
    // The read model is of document streams: an event of a document kind appended elsewhere (the webhook suites
    // append made-up deliveries of these kinds) is not a document's.
    if (streamOf(stored.streamId)?.kind !== 'document') return;
    const event = toDocumentEvent(stored);
    if (event.type === 'document.received') {
      const document = evolve(undefined, event);
      sql.send(
        `INSERT INTO documents (id, tenant_id, sandbox, lead_id, application_id, status, body, revision, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
        [
          document.id,
          stored.tenantId,
          stored.sandbox,
          document.lead_id,
          document.application_id,
          document.status,
          JSON.stringify(document),
          stored.revision,
          stored.createdAt,
        ],
      );
      return;
    }
    const id = idOfStream('document', stored.streamId);
    const row = (
      await sql.query<{ body: Document }>('SELECT body FROM documents WHERE id = $1 AND tenant_id = $2 FOR UPDATE', [
        id,
        stored.tenantId,
      ])
    ).rows[0];
    if (!row) throw new Error(`No read-model row for ${stored.streamId}`);
    const document = evolve(row.body, event);
    sql.send(
      'UPDATE documents SET status = $2, body = $3, revision = $4, updated_at = $5 WHERE id = $1 AND tenant_id = $6',
      [id, document.status, JSON.stringify(document), stored.revision, stored.createdAt, stored.tenantId],
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
