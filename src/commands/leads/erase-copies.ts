import { idOfStream, streamOf, type StreamKind } from '../../domain/streams.js';
import { OPENED_COLUMNS, toOpenedEvent, WITH_KEYS, type KeyedEventRow } from '../../events/event-rows.js';
import { isSealed, type PersonalDataKeys } from '../../events/personal-data.js';
import { extractPersonal, saysPersonalData } from '../../events/personal-fields.js';
import type { StoredEvent } from '../../events/types.js';
import type { Queryable, Writer } from '../../storage/postgres.js';
import { documentsProjection } from '../../projections/documents.js';
import { invoicesProjection } from '../../projections/invoices.js';
import type { Projection } from '../../projections/projection.js';
import { applyProjections } from '../../events/apply-projections.js';
import { tasksProjection } from '../../projections/tasks.js';
import { renderAllVersions } from '../../webhooks/versions/index.js';

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
 * Scrubs the copies of the person's data outside the log that hang off the lead itself, in the erasing transaction:
 * the lead's phone and email columns (its body is rewritten by the erasure event's projection), the applications'
 * module details (their read model state; the status shows none), and the Idempotency-Key answers about the lead
 * (their request hash is a hash of the person's data).
 */
export async function scrubPersonRows(
  sql: Queryable,
  s: { tenantId: string; sandbox: boolean; leadId: string },
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
  await sql.query(
    `DELETE FROM api_idempotency
      WHERE tenant_id = $1 AND sandbox = $2 AND operation LIKE 'createLead:%' AND body->>'id' = $3`,
    [s.tenantId, s.sandbox, s.leadId],
  );
}

/**
 * Webhook delivery bodies of these events, pending or sent, re-rendered from the events as they read once erased, each
 * in the payload version it was made in, so a retry or a resend sends no personal value; and the receivers' answers.
 */
export async function scrubDeliveries(sql: Queryable, events: readonly StoredEvent[]): Promise<void> {
  const bodies = events.flatMap((event) => {
    const rendered = renderAllVersions({ ...event, data: extractPersonal(event.type, event.data).clear });
    return rendered === null ? [] : [{ id: event.id, bodies: JSON.stringify(rendered) }];
  });
  await sql.query(
    `UPDATE webhook_deliveries d SET body = b.bodies ->> d.payload_version
       FROM unnest($1::uuid[], $2::jsonb[]) AS b(event_id, bodies)
      WHERE d.event_id = b.event_id AND b.bodies ? d.payload_version`,
    [bodies.map((b) => b.id), bodies.map((b) => b.bodies)],
  );
  await sql.query(
    `UPDATE webhook_delivery_attempts SET response_body = NULL
      WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE event_id = ANY($1::uuid[]))`,
    [events.map((e) => e.id)],
  );
}

/**
 * One page of the person's streams ($1 workspace, $2 mode, $3 person, $4 the last stream of the previous page, $5 the
 * page size), in stream id order: their lead's, their cases', the documents, tasks and invoices of both as the read
 * models file them, and every stream whose data key is filed under the person (whatever the read models say).
 */
const PERSON_STREAMS = `
  WITH cases AS (SELECT id FROM applications WHERE tenant_id = $1 AND sandbox = $2 AND lead_id = $3::uuid)
  SELECT s FROM (
    SELECT 'lead-' || $3::uuid::text AS s
    UNION SELECT 'application-' || id FROM cases
    UNION SELECT 'document-' || id FROM documents
           WHERE tenant_id = $1 AND sandbox = $2 AND (lead_id = $3::uuid OR application_id IN (SELECT id FROM cases))
    UNION SELECT 'task-' || id FROM tasks
           WHERE tenant_id = $1 AND sandbox = $2 AND (lead_id = $3::uuid OR application_id IN (SELECT id FROM cases))
    UNION SELECT 'invoice-' || id FROM invoices
           WHERE tenant_id = $1 AND sandbox = $2 AND (lead_id = $3::uuid OR application_id IN (SELECT id FROM cases))
    UNION SELECT stream_id FROM personal_data_keys
           WHERE tenant_id = $1 AND person_id = $3::uuid AND stream_id NOT LIKE 'lead-%'
  ) AS streams
  WHERE s > $4 ORDER BY s LIMIT $5`;

export interface PersonScope {
  tenantId: string;
  sandbox: boolean;
  personId: string;
}

/** The person's streams, one bounded page at a time (never all of them in memory at once). */
export async function* personStreams(sql: Queryable, scope: PersonScope, pageSize: number): AsyncGenerator<string[]> {
  let after = '';
  for (;;) {
    const page = await sql.query<{ s: string }>(PERSON_STREAMS, [
      scope.tenantId,
      scope.sandbox,
      scope.personId,
      after,
      pageSize,
    ]);
    if (page.rows.length === 0) return;
    yield page.rows.map((r) => r.s);
    if (page.rows.length < pageSize) return;
    after = page.rows[page.rows.length - 1]!.s;
  }
}

/** The events of these streams, opened, one bounded page at a time in (stream, revision) order. */
export async function* eventsOf(
  sql: Queryable,
  streams: string[],
  keys: PersonalDataKeys | undefined,
  pageSize: number,
): AsyncGenerator<{ events: StoredEvent[]; plaintext: number }> {
  let after = { stream: '', revision: -1 };
  for (;;) {
    const page = await sql.query<KeyedEventRow>(
      `SELECT ${OPENED_COLUMNS} FROM ${WITH_KEYS}
        WHERE events.stream_id = ANY($1::text[]) AND (events.stream_id, events.revision) > ($2, $3)
        ORDER BY events.stream_id, events.revision LIMIT $4`,
      [streams, after.stream, after.revision, pageSize],
    );
    if (page.rows.length === 0) return;
    // Events that hold personal values in the clear (written before encryption).
    const plaintext = page.rows.filter((r) => !isSealed(r.data) && saysPersonalData(r.type, r.data)).length;
    yield { events: page.rows.map((row) => toOpenedEvent(row, keys)), plaintext };
    if (page.rows.length < pageSize) return;
    const last = page.rows[page.rows.length - 1]!;
    after = { stream: last.stream_id, revision: last.revision };
  }
}

/** The read models re-projected by an erasure, by the prefix of their streams. */
const REPROJECTED: Record<string, Projection> = {
  document: documentsProjection,
  task: tasksProjection,
  invoice: invoicesProjection,
};

const kindOf = (stream: string): string | undefined => streamOf(stream)?.kind;
const idsOf = (streams: string[], kind: StreamKind): string[] =>
  streams.filter((s) => kindOf(s) === kind).map((s) => idOfStream(kind, s));

/**
 * Forgets the read-model rows of these documents, tasks and invoices (and the tasks' durable timers), which the
 * erasure then projects again from their events as they read once the keys are gone: no file name, title, line
 * description or reason, exactly what a rebuild would hold.
 */
export async function forgetReadRows(sql: Queryable, streams: string[]): Promise<void> {
  const tasks = idsOf(streams, 'task');
  await sql.query('DELETE FROM documents WHERE id = ANY($1::uuid[])', [idsOf(streams, 'document')]);
  await sql.query('DELETE FROM tasks WHERE id = ANY($1::uuid[])', [tasks]);
  await sql.query('DELETE FROM task_timers WHERE task_id = ANY($1::uuid[])', [tasks]);
  await sql.query('DELETE FROM invoices WHERE id = ANY($1::uuid[])', [idsOf(streams, 'invoice')]);
}

/** Projects again the events of forgotten read rows (see forgetReadRows), in stream order. */
export async function reproject(sql: Writer, events: readonly StoredEvent[]): Promise<void> {
  for (const [kind, projection] of Object.entries(REPROJECTED))
    await applyProjections(
      sql,
      [projection],
      events.filter((e) => kindOf(e.streamId) === kind),
    );
}

/** The ids of the person's documents, one page at a time (their files go once the erasure has committed). */
export async function* documentsOf(sql: Queryable, scope: PersonScope, pageSize: number): AsyncGenerator<string[]> {
  for await (const streams of personStreams(sql, scope, pageSize)) {
    const ids = idsOf(streams, 'document');
    if (ids.length > 0) yield ids;
  }
}
