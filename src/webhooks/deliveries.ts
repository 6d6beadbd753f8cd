import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Queryable, Statement } from '../storage/postgres.js';
import { inTransaction } from '../storage/transaction.js';
import { RATE_LOG_STEP_MS, RATE_WINDOW_MS, SLOW_ATTEMPT_MS, SPEED_MEMORY_MS } from './claims.js';
import { deliveryStateCondition, type DeliveryFilter } from './delivery-state.js';

export const DELIVERIES_CHANNEL = 'webhook_deliveries';
export const DELIVERY_LOG_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

export interface AttemptRecord {
  deliveryId: string;
  /** The attempt's number, counting from 1. */
  attempt: number;
  ok: boolean;
  /** Set when the delivery is still pending after this attempt. */
  nextAttemptAt: Date | null;
  attemptedAt: Date;
  finishedAt: Date;
  requestHeaders: Record<string, string>;
  responseStatus: number | null;
  responseHeaders: Record<string, string | string[]> | null;
  responseBody: string | null;
  durationMs: number;
  error: string | null;
  /** The end of the lease it was sent under (ClaimedDelivery.lease_until): recorded only while that lease is held. */
  leaseUntil: number;
}

/**
 * Records finished attempts in one statement: each delivery's new state, its log entry, and each endpoint's run of
 * failures (failures after the batch's last success for that endpoint, in the order given). Attempts whose lease was
 * lost to another worker write nothing. Returns, per recorded delivery, its endpoint's consecutive failures when the
 * batch changed them.
 */
export async function recordAttempts(
  pool: pg.Pool,
  owner: string,
  records: readonly AttemptRecord[],
  options: { named?: boolean } = {},
): Promise<Map<string, number | null>> {
  const { text, values } = recordingStatement(owner, records);
  // Named only on connections straight to PostgreSQL (`named`): planning this statement cost more than running it for
  // a batch of eight (docs/benchmarks.md, bench:webhooks), and a prepared one is planned once per connection. Behind a
  // transaction pooler a named statement would meet server sessions that lack it or already hold it, so it stays
  // unnamed there. Its generic plan joins the attempts by primary key whatever the statistics (stale-statistics.test.ts).
  const result = await pool.query<{ id: string; consecutive_failures: number | null }>({
    ...(options.named ? { name: RECORDING_STATEMENT } : {}),
    text,
    values,
  });
  return new Map(result.rows.map((row) => [row.id, row.consecutive_failures]));
}

/** The name the recording statement is prepared under on a direct connection (the event store's are vcrm_1, …). */
const RECORDING_STATEMENT = 'vcrm_webhook_recording';

/**
 * The statement of recordAttempts: one statement for all the attempts given, each as a JSON object. They travel as
 * an array (`jsonb[]`), whose length PostgreSQL estimates as small in a generic plan, so each is joined by primary key.
 */
export function recordingStatement(owner: string, records: readonly AttemptRecord[]): Statement {
  const attempts = records.map((r) => ({
    id: r.deliveryId,
    attempt: r.attempt,
    status: r.ok ? 'succeeded' : r.nextAttemptAt ? 'pending' : 'failed',
    next_attempt_at: r.nextAttemptAt,
    response_status: r.responseStatus,
    error: r.error,
    finished_at: r.finishedAt,
    attempted_at: r.attemptedAt,
    request_headers: r.requestHeaders,
    response_headers: r.responseHeaders,
    response_body: r.responseBody,
    duration_ms: r.durationMs,
    ok: r.ok,
    lease_until: r.leaseUntil,
  }));
  return {
    text: `WITH input AS (
       SELECT i.*, a.seq FROM unnest($2::jsonb[]) WITH ORDINALITY AS a(attempt, seq)
        CROSS JOIN LATERAL jsonb_to_record(a.attempt)
           AS i(id uuid, attempt int, status text, next_attempt_at timestamptz, response_status int, error text,
                finished_at timestamptz, attempted_at timestamptz, request_headers jsonb, response_headers jsonb,
                response_body text, duration_ms int, ok boolean, lease_until bigint)
     ), targets AS MATERIALIZED (
       SELECT w.id, w.endpoint_id, i.seq, i.lease_until FROM input i JOIN webhook_deliveries w ON w.id = i.id
     ), rated AS MATERIALIZED (
       -- The queue rows of the endpoints with a rate, whose log of attempt ends this statement writes: locked first,
       -- in endpoint order, as the claims lock them, so the two never deadlock. Other queue rows are not touched.
       SELECT q.endpoint_id FROM webhook_queues q
        WHERE q.endpoint_id IN (SELECT endpoint_id FROM targets) AND q.rate_limit IS NOT NULL
        ORDER BY q.endpoint_id FOR UPDATE
     ), ended AS MATERIALIZED (
       -- The attempt sent under the very lease still there (delivery, end and owner) ends it; one sent under an
       -- earlier lease that lapsed, and was dropped or claimed again, is not recorded (webhook_leases, migration 340).
       DELETE FROM webhook_leases l USING (SELECT DISTINCT t.id, t.lease_until FROM targets t) t
        WHERE l.delivery_id = t.id AND l.lease_until = t.lease_until AND l.owner = $1
          AND (SELECT count(*) FROM rated) >= 0 -- after the rated queue rows are locked
        RETURNING l.delivery_id, l.lease_until
     ), held AS MATERIALIZED (
       -- At most one attempt per delivery.
       SELECT DISTINCT ON (t.id) t.id, t.endpoint_id, t.seq
         FROM targets t JOIN ended e ON e.delivery_id = t.id AND e.lease_until = t.lease_until
        ORDER BY t.id, t.seq
     ), d AS (
       UPDATE webhook_deliveries w SET attempts = i.attempt, status = i.status, next_attempt_at = i.next_attempt_at,
              last_response_status = i.response_status, last_error = i.error, updated_at = i.finished_at
         FROM input i JOIN held h ON h.seq = i.seq
        WHERE w.id = h.id AND w.status = 'pending'
        RETURNING w.id, w.endpoint_id, h.seq
     ), released AS (
       -- An endpoint with a rate notes when each attempt ended (ms, rounded up to $6 ms): it counts against the rate
       -- a second more (src/webhooks/claims.ts). Ends more than a second and a step before this batch's last are
       -- dropped: the last is rounded up too, so an end a second before it may still count (seed 1110241799).
       UPDATE webhook_queues q SET rate_log =
                (SELECT coalesce(jsonb_object_agg(g.k, g.n), '{}'::jsonb)
                   FROM (SELECT u.k, sum(u.n)::int AS n
                           FROM (SELECT l.key AS k, l.value::int AS n FROM jsonb_each_text(q.rate_log) l
                                  WHERE l.key::bigint > h.last_end - $5::bigint - $6::bigint
                                 UNION ALL
                                 SELECT e.k, 1 FROM unnest(h.ends) AS e(k)) u
                          GROUP BY u.k) g)
         FROM (SELECT hd.endpoint_id, array_agg(hd.end_ms::text) AS ends,
                      max(hd.end_ms) AS last_end
                 FROM (SELECT hl.endpoint_id, hl.id,
                              (ceil(extract(epoch FROM i.finished_at) * 1000 / $6::bigint) * $6::bigint)::bigint AS end_ms
                         FROM held hl JOIN input i ON i.seq = hl.seq
                        WHERE hl.endpoint_id IN (SELECT endpoint_id FROM rated)) hd
                GROUP BY hd.endpoint_id) h
        WHERE q.endpoint_id = h.endpoint_id
     ), logged AS (
       INSERT INTO webhook_delivery_attempts (delivery_id, attempt, attempted_at, request_headers, response_status, response_headers, response_body, duration_ms, error)
       SELECT i.id, i.attempt, i.attempted_at, i.request_headers, i.response_status, i.response_headers, i.response_body, i.duration_ms, i.error
         FROM input i JOIN d ON d.seq = i.seq
       ON CONFLICT (delivery_id, attempt) DO NOTHING
     ), per AS (
       SELECT d.endpoint_id, i.seq, i.ok, i.duration_ms, i.finished_at FROM input i JOIN d ON d.seq = i.seq
     ), runs AS (
       SELECT p.endpoint_id, bool_or(p.ok) AS reset,
              count(*) FILTER (WHERE NOT p.ok AND p.seq > coalesce(l.last_ok, 0))::int AS added,
              max(p.finished_at) FILTER (WHERE NOT p.ok OR p.duration_ms >= $3) AS slow_at,
              max(p.finished_at) FILTER (WHERE p.ok AND p.duration_ms < $3) AS fast_at
         FROM per p JOIN (SELECT endpoint_id, max(seq) FILTER (WHERE ok) AS last_ok FROM per GROUP BY endpoint_id) l USING (endpoint_id)
        GROUP BY p.endpoint_id
     ), health AS (
       -- UPDATE locks only the rows its WHERE keeps: successes to an endpoint with no failures write (and queue) nothing.
       -- Fast successes refresh fast_until only once half of it has passed: they write about once in 30 s.
       UPDATE webhook_endpoint_health h SET consecutive_failures = CASE WHEN r.reset THEN r.added ELSE h.consecutive_failures + r.added END,
              slow_until = CASE WHEN r.slow_at IS NULL THEN h.slow_until
                                ELSE greatest(h.slow_until, r.slow_at + make_interval(secs => $4::double precision / 1000)) END,
              fast_until = CASE WHEN r.fast_at IS NULL THEN h.fast_until
                                ELSE greatest(h.fast_until, r.fast_at + make_interval(secs => $4::double precision / 1000)) END
         FROM runs r
        WHERE h.endpoint_id = r.endpoint_id
          AND (r.added > 0 OR h.consecutive_failures <> 0 OR r.slow_at IS NOT NULL
               OR (r.fast_at IS NOT NULL
                   AND (h.fast_until IS NULL OR h.fast_until < r.fast_at + make_interval(secs => $4::double precision / 2000))))
        RETURNING h.endpoint_id, h.consecutive_failures
     )
     SELECT d.id, health.consecutive_failures FROM d LEFT JOIN health ON health.endpoint_id = d.endpoint_id`,
    values: [
      owner,
      attempts.map((a) => JSON.stringify(a)),
      SLOW_ATTEMPT_MS,
      SPEED_MEMORY_MS,
      RATE_WINDOW_MS,
      RATE_LOG_STEP_MS,
    ],
  };
}

/** One attempt of a delivery as its log shows it. */
export interface DeliveryLogAttempt {
  attempt: number;
  attempted_at: string;
  request_headers: Record<string, string>;
  response_status: number | null;
  response_headers: Record<string, string | string[]> | null;
  response_body: string | null;
  duration_ms: number;
  error: string | null;
}

export interface DeliveryLogEntry {
  id: string;
  event_id: string;
  event: string;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  next_attempt_at: string | null;
  /** Due but held back by the endpoint's rate: when the rate next lets one of its deliveries go (else null). */
  throttled_until: string | null;
  resend_of: string | null;
  superseded_by: string | null;
  created_at: string;
  updated_at: string;
  request_body: string;
  log: DeliveryLogAttempt[];
}

/** A delivery's row with its attempts (as JSON): the log entry before its times and body are put in the API's form. */
type DeliveryRow = Omit<
  DeliveryLogEntry,
  'event' | 'next_attempt_at' | 'throttled_until' | 'created_at' | 'updated_at' | 'request_body'
> & {
  event_type: string;
  next_attempt_at: Date | null;
  created_at: Date;
  updated_at: Date;
  body: string;
};

/**
 * Until when the endpoint's rate holds back its due deliveries, or null: the `throttled_until` its last claim wrote on
 * its queue row, while it lies ahead (docs/decisions.md, "A per-endpoint rate").
 */
export async function endpointThrottledUntil(sql: Queryable, endpointId: string, now: Date): Promise<Date | null> {
  const result = await sql.query<{ throttled_until: Date }>(
    'SELECT throttled_until FROM webhook_queues WHERE endpoint_id = $1 AND throttled_until > $2',
    [endpointId, now],
  );
  return result.rows[0]?.throttled_until ?? null;
}

/** A pending delivery due before the rate opens waits for it: the instant it waits for, as the API shows it. */
export function throttledFor(
  delivery: { status: string; next_attempt_at: Date | null },
  until: Date | null,
): string | null {
  return until && delivery.status === 'pending' && delivery.next_attempt_at && delivery.next_attempt_at < until
    ? until.toISOString()
    : null;
}

/** The delivery log of one endpoint, newest first, within the retention window. `before` is the cursor (a delivery id). */
export async function listDeliveries(
  sql: Queryable,
  endpointId: string,
  options: {
    limit: number;
    before?: string;
    now: Date;
    /** The console's filters: only deliveries in this status, of this event type, created at or after `since`. */
    status?: DeliveryLogEntry['status'];
    event?: string;
    since?: Date;
    /** Only deliveries in this state (src/webhooks/delivery-state.ts), read with the endpoint paused or not. */
    state?: { filter: DeliveryFilter; endpointPaused: boolean };
    /** Only deliveries whose event type is LIKE one of these patterns (eventPatterns). */
    eventPatterns?: string[];
  },
): Promise<{ data: DeliveryLogEntry[]; next_cursor: string | null }> {
  const since = new Date(options.now.getTime() - DELIVERY_LOG_RETENTION_MS);
  const state = options.state ? `AND ${deliveryStateCondition(options.state.filter, '$8::boolean')}` : '';
  const result = await sql.query<DeliveryRow>(
    `SELECT d.id, d.event_id, d.event_type, d.status, d.attempts, d.next_attempt_at, d.resend_of, d.superseded_by, d.created_at, d.updated_at, d.body,
            coalesce((SELECT json_agg(json_build_object('attempt', a.attempt, 'attempted_at', a.attempted_at, 'request_headers', a.request_headers,
                        'response_status', a.response_status, 'response_headers', a.response_headers, 'response_body', a.response_body,
                        'duration_ms', a.duration_ms, 'error', a.error) ORDER BY a.attempt)
                        FROM webhook_delivery_attempts a WHERE a.delivery_id = d.id), '[]'::json) AS log
       FROM webhook_deliveries d
      WHERE d.endpoint_id = $1 AND d.created_at >= $2
        AND ($3::uuid IS NULL OR (d.created_at, d.id) < (SELECT created_at, id FROM webhook_deliveries WHERE id = $3))
        AND ($5::text IS NULL OR d.status = $5) AND ($6::text IS NULL OR d.event_type = $6)
        AND ($7::timestamptz IS NULL OR d.created_at >= $7)
        AND ($8::boolean IS NULL OR TRUE) -- names $8's type when no state filter reads it
        ${state}
        AND ($9::text[] IS NULL OR d.event_type LIKE ANY ($9))
      ORDER BY d.created_at DESC, d.id DESC
      LIMIT $4`,
    [
      endpointId,
      since,
      options.before ?? null,
      options.limit + 1,
      options.status ?? null,
      options.event ?? null,
      options.since ?? null,
      options.state?.endpointPaused ?? null,
      options.eventPatterns?.length ? options.eventPatterns : null,
    ],
  );
  const rows = result.rows.slice(0, options.limit);
  const throttled = await endpointThrottledUntil(sql, endpointId, options.now);
  return {
    data: rows.map((d) => ({
      id: d.id,
      event_id: d.event_id,
      event: d.event_type,
      status: d.status,
      attempts: d.attempts,
      next_attempt_at: d.next_attempt_at ? d.next_attempt_at.toISOString() : null,
      throttled_until: throttledFor(d, throttled),
      resend_of: d.resend_of,
      superseded_by: d.superseded_by,
      created_at: d.created_at.toISOString(),
      updated_at: d.updated_at.toISOString(),
      request_body: d.body,
      log: d.log.map((a) => ({ ...a, attempted_at: new Date(a.attempted_at).toISOString() })),
    })),
    next_cursor: result.rows.length > options.limit ? rows[rows.length - 1]!.id : null,
  };
}

/**
 * A manual resend: a new delivery (new id) of the same event with the same sequence number, due now, and the same body
 * in the same payload version, unless `rendered` gives the event's body in another version (resendInVersion).
 */
export async function resendDelivery(
  sql: Queryable,
  endpointId: string,
  deliveryId: string,
  now: Date,
  rendered?: { version: string; body: string },
): Promise<{ id: string; event_id: string } | undefined> {
  const result = await sql.query<{ id: string; event_id: string }>(
    `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status, next_attempt_at, resend_of, created_at, updated_at, sequence, previous_event_id, payload_version)
     SELECT $1, event_id, endpoint_id, tenant_id, sandbox, event_type, coalesce($6, body), 'pending', $4, id, $4, $4, sequence,
            previous_event_id, coalesce($5, payload_version)
       FROM webhook_deliveries WHERE id = $2 AND endpoint_id = $3
     RETURNING id, event_id`,
    [randomUUID(), deliveryId, endpointId, now, rendered?.version ?? null, rendered?.body ?? null],
  );
  if (result.rows[0]) await sql.query(`SELECT pg_notify('${DELIVERIES_CHANNEL}', '')`);
  return result.rows[0];
}

/**
 * Ends what still waits to send the same event to the same endpoint once a manual resend has succeeded: those
 * deliveries are cancelled with `superseded_by` naming the resend, so the receiver does not get the event again and
 * the delivery log says why. A resend made after the succeeded one (asked for while it was on its way) is kept. A delivery in flight at that moment is not stopped (at least once); its attempt is not
 * recorded since it is no longer pending. Returns how many were ended.
 */
export async function endSupersededDeliveries(
  sql: Queryable,
  succeededResends: readonly { id: string; event_id: string; endpoint_id: string }[],
  now: Date,
): Promise<number> {
  if (succeededResends.length === 0) return 0;
  const { text, values } = supersedingStatement(succeededResends, now);
  const result = await sql.query(text, values);
  return result.rowCount ?? 0;
}

/**
 * The statement of endSupersededDeliveries. The deliveries of an event to an endpoint are its original, found by the
 * unique index of originals, and its resends, found by the index of resends (0047): never by the endpoint's delivery
 * log, which a filter on event and status would read whole.
 */
export function supersedingStatement(
  succeededResends: readonly { id: string; event_id: string; endpoint_id: string }[],
  now: Date,
): Statement {
  return {
    text: `UPDATE webhook_deliveries d SET status = 'cancelled', superseded_by = r.id, next_attempt_at = NULL,
            updated_at = $4
       FROM unnest($1::uuid[], $2::uuid[], $3::uuid[]) AS r(id, event_id, endpoint_id)
      -- The succeeded resend's own row, by its key (OFFSET 0 keeps it a lookup, never a join the planner may scan for).
      CROSS JOIN LATERAL (SELECT c.created_at FROM webhook_deliveries c WHERE c.id = r.id OFFSET 0) AS succeeded
      CROSS JOIN LATERAL (
              SELECT o.id FROM webhook_deliveries o
               WHERE o.event_id = r.event_id AND o.endpoint_id = r.endpoint_id AND o.resend_of IS NULL
              UNION ALL
              SELECT s.id FROM webhook_deliveries s
               WHERE s.event_id = r.event_id AND s.endpoint_id = r.endpoint_id AND s.resend_of IS NOT NULL
              OFFSET 0) AS same
      -- A resend asked for after the one that succeeded was made is the member's newer request: it stays.
      WHERE d.id = same.id AND d.id <> r.id AND d.status = 'pending' AND d.created_at <= succeeded.created_at`,
    values: [
      succeededResends.map((r) => r.id),
      succeededResends.map((r) => r.event_id),
      succeededResends.map((r) => r.endpoint_id),
      now,
    ],
  };
}

/** Deliveries per second a resumed endpoint's backlog is scheduled at (docs/decisions.md). */
export const RESUMED_DRAIN_PER_SECOND = 50;

/**
 * Schedules what waited for a paused endpoint at a bounded rate, oldest first: the n-th pending delivery is due
 * n / `perSecond` seconds after `now`, so a large backlog reaches the receiver that just recovered (and takes the
 * workers' slots) a bounded number per second, not all at once.
 */
export async function scheduleResumedBacklog(
  sql: Queryable,
  endpointId: string,
  now: Date,
  perSecond: number = RESUMED_DRAIN_PER_SECOND,
): Promise<void> {
  // The queue comes due now: a claim that found the paused endpoint with nothing to send left it with none. Its row's
  // lock is taken first, as the claims and the recording take it before the deliveries'.
  await sql.query('UPDATE webhook_queues SET due_at = $2 WHERE endpoint_id = $1', [endpointId, now]);
  const { text, values } = resumedBacklogStatement(endpointId, now, perSecond);
  await sql.query(text, values);
}

/**
 * The statement of scheduleResumedBacklog. The endpoint's pending deliveries come from the pending index (every
 * pending delivery has a next attempt time), picked apart from their ordering so that no plan reads the endpoint's
 * whole delivery log in created_at order.
 */
export function resumedBacklogStatement(endpointId: string, now: Date, perSecond: number): Statement {
  return {
    text: `WITH pending AS MATERIALIZED (
       SELECT id, created_at FROM webhook_deliveries
        WHERE endpoint_id = $1 AND status = 'pending' AND next_attempt_at IS NOT NULL
     )
     UPDATE webhook_deliveries d SET next_attempt_at = $2::timestamptz + make_interval(secs => (q.turn - 1) / $3::double precision)
       FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS turn FROM pending) q
      WHERE d.id = q.id`,
    values: [endpointId, now, perSecond],
  };
}

/** Drops log entries older than the retention window and cancels what waits for an endpoint that no longer exists. */
export async function purgeDeliveries(pool: pg.Pool, now: Date): Promise<{ purged: number; cancelled: number }> {
  const before = new Date(now.getTime() - DELIVERY_LOG_RETENTION_MS);
  // The attempts go with their deliveries (no foreign key cascades them: migration 0230). The deliveries are locked
  // first, so a recording in flight finishes (or finds them gone) before the next statement's snapshot, which then
  // sees every attempt it appended.
  const purged = await inTransaction(pool, async (tx) => {
    await tx.query('SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE created_at < $1 FOR UPDATE) l', [
      before,
    ]);
    const gone = await tx.query<{ n: number }>(
      `WITH gone AS (DELETE FROM webhook_deliveries WHERE created_at < $1 RETURNING id),
            attempts AS (DELETE FROM webhook_delivery_attempts a WHERE a.delivery_id IN (SELECT id FROM gone))
       SELECT count(*)::int AS n FROM gone`,
      [before],
    );
    return gone.rows[0]?.n ?? 0;
  });
  const sql: Queryable = pool;
  const cancelled = await sql.query(
    `UPDATE webhook_deliveries d SET status = 'cancelled', updated_at = $1
      WHERE d.status = 'pending' AND NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = d.endpoint_id)`,
    [now],
  );
  await sql.query(
    'DELETE FROM webhook_queues q WHERE NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = q.endpoint_id)',
  );
  // Leases a crashed worker left on an endpoint since deleted: no claim of that endpoint will drop them.
  await sql.query(
    'DELETE FROM webhook_leases l WHERE NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = l.endpoint_id)',
  );
  return { purged, cancelled: cancelled.rowCount ?? 0 };
}

/**
 * Deliveries due and not leased, and deliveries leased (being sent), for metrics. The leases are read from their
 * own rows (webhook_leases); every pending delivery has a next attempt time, and saying so lets the count read the
 * pending-deliveries index (migration 0045).
 */
export async function deliveryBacklog(sql: Queryable, now: Date): Promise<{ due: number; inFlight: number }> {
  const result = await sql.query<{ due: number; in_flight: number }>(
    `WITH leased AS MATERIALIZED (
       SELECT l.delivery_id AS id FROM webhook_leases l WHERE l.lease_until > $2::bigint
     )
     SELECT (SELECT count(*) FROM webhook_deliveries d
              WHERE d.status = 'pending' AND d.next_attempt_at IS NOT NULL AND d.next_attempt_at <= $1
                AND d.id NOT IN (SELECT id FROM leased))::bigint AS due,
            (SELECT count(*) FROM leased)::bigint AS in_flight`,
    [now, now.getTime()],
  );
  return { due: result.rows[0]?.due ?? 0, inFlight: result.rows[0]?.in_flight ?? 0 };
}
