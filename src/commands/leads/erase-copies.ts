import { extractPersonal } from '../../events/personal-fields.js';
import type { RecordedEvent } from '../../events/types.js';
import type { Queryable } from '../../storage/postgres.js';
import type { StoreTransaction } from '../../events/event-store.js';
import { documentsProjection, documentStream } from '../../projections/documents.js';
import { invoicesProjection, invoiceStream } from '../../projections/invoices.js';
import type { Projection } from '../../projections/projection.js';
import { tasksProjection, taskStream } from '../../projections/tasks.js';
import { envelopeBody } from '../../webhooks/envelope.js';

/**
 * The person's key rows ($1 the workspace, $2 the person): their lead's stream, found by its primary key, and the
 * streams filed under them, found by the person index, which leaves lead streams out (migration 0044: a lead's
 * person is the lead itself, so its capture writes one index entry fewer).
 */
export const PERSON_KEY_ROWS = `tenant_id = $1 AND person_id = $2::uuid
  AND (stream_id = 'lead-' || $2::uuid::text OR stream_id NOT LIKE 'lead-%')`;

/** When the person was erased, if they were (any of their streams' keys carries the time). */
export async function erasedAt(sql: Queryable, tenantId: string, personId: string): Promise<Date | undefined> {
  const result = await sql.query<{ erased_at: Date | null }>(
    `SELECT min(erased_at) AS erased_at FROM personal_data_keys WHERE ${PERSON_KEY_ROWS}`,
    [tenantId, personId],
  );
  return result.rows[0]?.erased_at ?? undefined;
}

/** How many of the person's streams still have their data key. */
export async function liveKeys(sql: Queryable, tenantId: string, personId: string): Promise<number> {
  const result = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM personal_data_keys WHERE ${PERSON_KEY_ROWS} AND wrapped_key IS NOT NULL`,
    [tenantId, personId],
  );
  return result.rows[0]?.n ?? 0;
}

/**
 * Deletes the data keys of the person's streams: each key row keeps only its tombstone (erased_at), which tells
 * readers the sealed values are gone and refuses new personal data. A stream without a key row (written before
 * encryption) gets a tombstone too.
 */
export async function eraseKeys(
  sql: Queryable,
  e: { tenantId: string; personId: string; streams: string[]; now: Date },
): Promise<void> {
  await sql.query(
    `INSERT INTO personal_data_keys (stream_id, tenant_id, person_id, wrapped_key, created_at, erased_at)
     SELECT s, $2, $3, NULL, $4, $4 FROM unnest($1::text[]) AS s
     ON CONFLICT (stream_id) DO UPDATE SET wrapped_key = NULL, erased_at = coalesce(personal_data_keys.erased_at, $4)`,
    [e.streams, e.tenantId, e.personId, e.now],
  );
  await sql.query(
    `UPDATE personal_data_keys SET wrapped_key = NULL, erased_at = $3 WHERE ${PERSON_KEY_ROWS} AND erased_at IS NULL`,
    [e.tenantId, e.personId, e.now],
  );
}

/**
 * Scrubs the copies of the person's data outside the log, in the erasing transaction:
 * - the lead's phone and email columns (its body is rewritten by the erasure event's projection);
 * - the applications' module details (their read model state; the status shows none);
 * - Idempotency-Key answers about the lead (their request hash is a hash of the person's data);
 * - webhook delivery bodies of the person's events, pending or sent, re-rendered from the events as they read once
 *   erased, so a retry or a resend sends no personal value; and the receivers' answers to them.
 */
export async function scrubCopies(
  sql: Queryable,
  s: {
    tenantId: string;
    sandbox: boolean;
    leadId: string;
    events: readonly RecordedEvent[];
  },
): Promise<void> {
  await sql.query('UPDATE leads SET phone = NULL, email = NULL WHERE id = $1 AND tenant_id = $2', [
    s.leadId,
    s.tenantId,
  ]);
  await sql.query(
    `UPDATE applications
        SET state = jsonb_set(state, '{modules}', (
              SELECT coalesce(jsonb_agg(m || '{"details": {}}'::jsonb ORDER BY i), '[]'::jsonb)
                FROM jsonb_array_elements(state->'modules') WITH ORDINALITY AS x(m, i)))
      WHERE tenant_id = $1 AND sandbox = $2 AND lead_id = $3 AND jsonb_typeof(state->'modules') = 'array'`,
    [s.tenantId, s.sandbox, s.leadId],
  );
  await sql.query(`DELETE FROM lead_idempotency WHERE tenant_id = $1 AND sandbox = $2 AND body->>'id' = $3`, [
    s.tenantId,
    s.sandbox,
    s.leadId,
  ]);
  const bodies = s.events.flatMap((event) => {
    const body = envelopeBody({ ...event, data: extractPersonal(event.type, event.data).clear });
    return body === null ? [] : [{ id: event.id, body }];
  });
  const ids = s.events.map((e) => e.id);
  await sql.query(
    `UPDATE webhook_deliveries d SET body = b.body
       FROM unnest($1::uuid[], $2::text[]) AS b(event_id, body) WHERE d.event_id = b.event_id`,
    [bodies.map((b) => b.id), bodies.map((b) => b.body)],
  );
  await sql.query(
    `UPDATE webhook_delivery_attempts SET response_body = NULL
      WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE event_id = ANY($1::uuid[]))`,
    [ids],
  );
}

/** The documents, tasks and invoices of a lead and of its applications. */
export interface Owned {
  documents: string[];
  tasks: string[];
  invoices: string[];
}

export async function ownedBy(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  leadId: string,
  applicationIds: string[],
): Promise<Owned> {
  const ids = async (table: 'documents' | 'tasks' | 'invoices') =>
    (
      await sql.query<{ id: string }>(
        `SELECT id FROM ${table} WHERE tenant_id = $1 AND sandbox = $2
            AND (lead_id = $3 OR application_id = ANY($4::uuid[])) ORDER BY id`,
        [tenantId, sandbox, leadId, applicationIds],
      )
    ).rows.map((r) => r.id);
  return { documents: await ids('documents'), tasks: await ids('tasks'), invoices: await ids('invoices') };
}

/**
 * Projects the person's documents, tasks and invoices again from their events as they read once the keys are gone,
 * so their read models (and the durable task timers) hold exactly what a rebuild would: no file name, title, line
 * description or reason.
 */
export async function reprojectErased(tx: StoreTransaction, owned: Owned): Promise<void> {
  await tx.writes.query('DELETE FROM documents WHERE id = ANY($1::uuid[])', [owned.documents]);
  await tx.writes.query('DELETE FROM tasks WHERE id = ANY($1::uuid[])', [owned.tasks]);
  await tx.writes.query('DELETE FROM task_timers WHERE task_id = ANY($1::uuid[])', [owned.tasks]);
  await tx.writes.query('DELETE FROM invoices WHERE id = ANY($1::uuid[])', [owned.invoices]);
  const streams: [Projection, string][] = [
    ...owned.documents.map((id): [Projection, string] => [documentsProjection, documentStream(id)]),
    ...owned.tasks.map((id): [Projection, string] => [tasksProjection, taskStream(id)]),
    ...owned.invoices.map((id): [Projection, string] => [invoicesProjection, invoiceStream(id)]),
  ];
  for (const [projection, stream] of streams)
    for (const event of await tx.readStream(stream)) await projection.apply(tx.writes, event);
}
