import type pg from 'pg';
import type { PersonalDataKeys } from '../events/personal-data.js';
import { readAllWith } from '../events/postgres-event-store.js';
import { withTransaction } from '../storage/postgres.js';
import { DELIVERIES_CHANNEL } from '../webhooks/deliveries.js';
import { isWebhookKind, renderAllVersions, type PayloadVersion } from '../webhooks/versions/index.js';
import { extractPersonal, holdsPersonalData } from '../events/personal-fields.js';
import type { GlobalPosition, StoredEvent } from '../events/types.js';
import type { Queryable } from '../storage/postgres.js';
import { passGate } from '../commands/person-locks.js';

export const FANOUT_SUBSCRIPTION = 'webhook-fanout';

export interface FanOutResult {
  /** Events read past the checkpoint. */
  events: number;
  deliveries: number;
  /** Another process holds the checkpoint right now. */
  busy: boolean;
}

/**
 * One step of the fan-out: in one transaction, locks the checkpoint row (another process holding it makes this one
 * skip), reads the next events after it, records a delivery for each webhook event and each endpoint of the same
 * workspace and mode subscribed to its kind and created before it, and moves the checkpoint. Deliveries and the
 * checkpoint commit together, and a unique index on (event, endpoint) makes a replay record nothing twice.
 */
export async function fanOutBatch(
  pool: pg.Pool,
  keys: PersonalDataKeys | undefined,
  now: Date,
  batchSize = 500,
): Promise<FanOutResult> {
  return withTransaction(pool, async (sql) => {
    const at = await lockCheckpoint(sql);
    if (at === 'busy' || at === 'created') return { events: 0, deliveries: 0, busy: at === 'busy' };
    const events = await readAllWith(sql, at, batchSize, true, keys);
    if (events.length === 0) return { events: 0, deliveries: 0, busy: false };
    const erased = await lockPersonsOf(sql, events);
    const deliveries = await recordDeliveries(sql, deliverableOf(events, erased), now);
    await moveCheckpoint(sql, events[events.length - 1]!.position, now);
    if (deliveries > 0) await sql.query(`SELECT pg_notify('${DELIVERIES_CHANNEL}', '')`);
    return { events: events.length, deliveries, busy: false };
  });
}

/**
 * The fan-out's position, its row locked; `busy` when another process holds it, `created` when there was no row yet
 * (one is inserted at the start of the log, for the next step).
 */
async function lockCheckpoint(sql: Queryable): Promise<GlobalPosition | 'busy' | 'created'> {
  const checkpoint = await sql.query<{ tx_id_text: string; position: number }>(
    'SELECT tx_id::text AS tx_id_text, position FROM subscription_checkpoints WHERE name = $1 FOR UPDATE SKIP LOCKED',
    [FANOUT_SUBSCRIPTION],
  );
  const at = checkpoint.rows[0];
  if (at) return { txId: at.tx_id_text, position: at.position };
  const exists = await sql.query('SELECT 1 FROM subscription_checkpoints WHERE name = $1', [FANOUT_SUBSCRIPTION]);
  if (exists.rowCount !== 0) return 'busy';
  await sql.query(
    "INSERT INTO subscription_checkpoints (name, tx_id, position) VALUES ($1, '0', 0) ON CONFLICT DO NOTHING",
    [FANOUT_SUBSCRIPTION],
  );
  return 'created';
}

interface Deliverable {
  event: StoredEvent;
  /** The body in each payload version: each endpoint gets the one of the version it is on. */
  bodies: Record<PayloadVersion, string>;
}

/** The webhook events with the bodies they are delivered with; an erased stream's events read as they do once erased. */
function deliverableOf(events: readonly StoredEvent[], erased: ReadonlySet<string>): Deliverable[] {
  return events.flatMap((event) => {
    const said = erased.has(event.streamId) ? { ...event, data: extractPersonal(event.type, event.data).clear } : event;
    const bodies = renderAllVersions(said);
    return bodies === null ? [] : [{ event, bodies }];
  });
}

/**
 * One pending delivery per event and subscribed endpoint, its body in the endpoint's payload version (and the version
 * recorded with it, which its retries and resends keep); how many were recorded. Each endpoint's deliveries are
 * numbered on from its counter in the order of the batch (the log's order), each naming the event its endpoint was
 * sent just before; the fan-out alone advances the counters, under its checkpoint's lock, so numbers are dense.
 */
async function recordDeliveries(sql: Queryable, deliverable: readonly Deliverable[], now: Date): Promise<number> {
  if (deliverable.length === 0) return 0;
  const inserted = await sql.query(
    `WITH targets AS (
       SELECT ev.*, ep.id AS endpoint_id, ep.payload_version
         FROM unnest($1::uuid[], $2::uuid[], $3::boolean[], $4::text[], $5::jsonb[], $6::xid8[], $7::bigint[], $8::text[])
              WITH ORDINALITY AS ev(id, tenant_id, sandbox, type, bodies, tx_id, position, target, ord)
         JOIN webhook_endpoints ep
           ON ep.tenant_id = ev.tenant_id AND ep.sandbox = ev.sandbox
          AND (ev.tx_id, ev.position) > (ep.created_tx_id, ep.created_position)
          AND CASE WHEN ev.type = 'webhook.test' THEN ep.id::text = ev.target ELSE ev.type = ANY (ep.events) END
        WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                           WHERE d.event_id = ev.id AND d.endpoint_id = ep.id AND d.resend_of IS NULL)
     ),
     numbered AS (
       SELECT t.*, t.bodies ->> t.payload_version AS body,
              coalesce(s.last_sequence, 0) + row_number() OVER (PARTITION BY t.endpoint_id ORDER BY t.ord) AS sequence,
              coalesce(lag(t.id) OVER (PARTITION BY t.endpoint_id ORDER BY t.ord), s.last_event_id) AS previous_event_id
         FROM targets t LEFT JOIN webhook_endpoint_sequences s ON s.endpoint_id = t.endpoint_id
     ),
     inserted AS (
       INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status,
                                       next_attempt_at, created_at, updated_at, sequence, previous_event_id, payload_version)
       SELECT gen_random_uuid(), id, endpoint_id, tenant_id, sandbox, type, body, 'pending', $9, $9, $9,
              sequence, previous_event_id, payload_version
         FROM numbered
       RETURNING endpoint_id, sequence, event_id
     )
     INSERT INTO webhook_endpoint_sequences (endpoint_id, last_sequence, last_event_id)
     SELECT DISTINCT ON (endpoint_id) endpoint_id, sequence, event_id FROM inserted ORDER BY endpoint_id, sequence DESC
     ON CONFLICT (endpoint_id) DO UPDATE SET last_sequence = excluded.last_sequence, last_event_id = excluded.last_event_id
     RETURNING (SELECT count(*) FROM inserted) AS recorded`,
    [
      deliverable.map((d) => d.event.id),
      deliverable.map((d) => d.event.tenantId),
      deliverable.map((d) => d.event.sandbox),
      deliverable.map((d) => d.event.type),
      deliverable.map((d) => JSON.stringify(d.bodies)),
      deliverable.map((d) => d.event.position.txId),
      deliverable.map((d) => d.event.position.position),
      deliverable.map((d) => (typeof d.event.data.endpoint_id === 'string' ? d.event.data.endpoint_id : '')),
      now,
    ],
  );
  return Number(inserted.rows[0]?.recorded ?? 0);
}

async function moveCheckpoint(sql: Queryable, last: GlobalPosition, now: Date): Promise<void> {
  await sql.query(
    'UPDATE subscription_checkpoints SET tx_id = $2::xid8, position = $3, updated_at = $4 WHERE name = $1',
    [FANOUT_SUBSCRIPTION, last.txId, last.position, now],
  );
}

/**
 * Takes the lock of every person the events' streams are filed under (shared, as a write does: docs/decisions.md,
 * "Erasure and writes") and answers which of the streams are erased once the locks are held. The events were opened
 * before: an erasure that committed in between is seen here, and the bodies of those streams' events are rendered as
 * they read once erased; one that starts later waits for this batch to commit and scrubs its deliveries.
 */
async function lockPersonsOf(sql: Queryable, events: readonly StoredEvent[]): Promise<Set<string>> {
  const personal = events.filter(
    (e) => holdsPersonalData(e.type, e.data) && isWebhookKind(e.type) && isPayload(e.data.payload),
  );
  const streams = [...new Set(personal.map((e) => e.streamId))];
  if (streams.length === 0) return new Set();
  await passGate('fanout-read', '');
  // Only persons of a workspace and mode with an endpoint: no delivery is made for the others.
  const persons = await sql.query<{ id: string }>(
    `SELECT l.id FROM leads l
      WHERE (l.tenant_id, l.id) IN (SELECT tenant_id, person_id FROM personal_data_keys WHERE stream_id = ANY($1::text[]))
        AND EXISTS (SELECT 1 FROM webhook_endpoints ep WHERE ep.tenant_id = l.tenant_id AND ep.sandbox = l.sandbox)
      ORDER BY l.id FOR KEY SHARE OF l`,
    [streams],
  );
  if (persons.rows.length === 0) return new Set();
  await passGate('fanout-insert', persons.rows[0]!.id);
  const erased = await sql.query<{ stream_id: string }>(
    'SELECT stream_id FROM personal_data_keys WHERE stream_id = ANY($1::text[]) AND erased_at IS NOT NULL',
    [streams],
  );
  return new Set(erased.rows.map((r) => r.stream_id));
}

const isPayload = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);
