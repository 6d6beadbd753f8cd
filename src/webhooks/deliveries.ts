import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { inTransaction } from '../storage/pipeline.js';
import { queryPrepared, type Queryable, type Statement } from '../storage/postgres.js';

export const DELIVERIES_CHANNEL = 'webhook_deliveries';
export const DELIVERY_LOG_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** A delivery a worker holds a lease on, with what it needs to send it. */
export interface ClaimedDelivery {
  id: string;
  event_id: string;
  endpoint_id: string;
  tenant_id: string;
  sandbox: boolean;
  event_type: string;
  body: string;
  attempts: number;
  resend_of: string | null;
  url: string;
  endpoint_status: 'active' | 'paused';
  sealed_secret: string;
  previous_sealed_secret: string | null;
  previous_secret_valid_until: Date | null;
}

/** Deliveries in flight at once to one endpoint, across all workers: a hanging or slow endpoint holds no more slots. */
export const DEFAULT_PER_ENDPOINT_IN_FLIGHT = 16;
/**
 * In-flight deliveries allowed to an endpoint proven fast: with 16 for every endpoint, one healthy receiver answering
 * in a few ms got only 440-620 deliveries/s, the claim and record round trips setting the pace (docs/decisions.md).
 */
export const DEFAULT_FAST_ENDPOINT_IN_FLIGHT = 64;
/** An attempt that fails or takes this long makes its endpoint slow (and one in flight this long, too). */
export const SLOW_ATTEMPT_MS = 1_000;
/** How long one slow attempt keeps its endpoint slow, and one fast success keeps it fast. */
export const SPEED_MEMORY_MS = 60_000;

/**
 * Deliveries in flight at once to all the endpoints of one tenant (workspace, live and test together), across all
 * workers: a tenant with many hanging endpoints holds no more slots than this, however many it has. It equals the
 * proven fast endpoint's cap, so one fast endpoint can still use all of its own, and is half of a worker's 128 slots,
 * so even a single worker keeps half of them for the other tenants (docs/decisions.md).
 */
export const DEFAULT_PER_TENANT_IN_FLIGHT = 64;

export interface ClaimLimits {
  /** Free slots of the claiming worker. */
  limit: number;
  /** In-flight leases allowed per endpoint, counting those of every worker (slow, failing or new endpoints). */
  perEndpoint: number;
  /** In-flight leases allowed per endpoint proven fast (see claimDueDeliveries); perEndpoint when unset. */
  perFastEndpoint?: number;
  /** In-flight leases allowed per tenant, all its endpoints and every worker counted; no tenant cap when unset. */
  perTenant?: number;
}

/** Namespace of the claim's tenant locks; the other advisory locks (streams, migrations) hash other text or use a constant. */
const CLAIM_LOCK_PREFIX = 'webhook-claim-tenant:';
/** The transaction-local setting through which the locking statement hands the locked tenants to the claim. */
const CLAIM_TENANTS_SETTING = 'webhook_claim.tenants';

/**
 * Leases up to `limit` due deliveries to `owner` until `leaseUntil`, fairly:
 * - each endpoint gets at most `perEndpoint` leases in flight (`perFastEndpoint` when proven fast), and each tenant at
 *   most `perTenant` over all its endpoints (every worker's live leases count), so an endpoint or a tenant whose
 *   receivers hang or answer slowly holds a bounded number of slots however large its backlog;
 * - slots go round-robin between tenants (each tenant's n-th delivery before any tenant's n+1-th), and within a
 *   tenant round-robin between its endpoints, oldest due first, so a tenant's backlog does not delay another tenant.
 * Two statements in one transaction, sent in one round trip: the first takes a transaction-scoped advisory lock per
 * tenant with due deliveries (skipping tenants another worker holds), the second, whose snapshot is taken once those
 * locks are held and so sees every lease committed by an earlier holder, claims for the locked tenants only. Two
 * workers therefore never claim for one tenant at once and both caps hold across processes. A lease left by a crashed
 * worker ends and the delivery is claimed again. Deliveries to paused endpoints wait (webhook.test excepted).
 */
export async function claimDueDeliveries(
  pool: pg.Pool,
  owner: string,
  now: Date,
  leaseUntil: Date,
  limits: ClaimLimits,
): Promise<ClaimedDelivery[]> {
  const [lock, claim] = claimStatements(owner, now, leaseUntil, limits);
  // Planned for its own values each time: a generic plan of the claim measured three times slower (docs/benchmarks.md).
  const result = await inTransaction(pool, (tx) => tx.queryUnprepared<ClaimedDelivery>(claim.text, claim.values), [
    lock,
  ]);
  return result.rows;
}

/** Whether a delivery `d` is due now ($now) and not leased (its endpoint's status aside). */
const DUE = `d.status = 'pending' AND d.next_attempt_at <= $now AND (d.lease_until IS NULL OR d.lease_until <= $now)`;

/**
 * The due deliveries of the endpoint `ep` (`endpoint` names its id) that may be sent, oldest first, at most `limit`:
 * all of them while it is active, only its webhook.test deliveries while it is paused. Two branches, of which the
 * endpoint's status (a value of the outer row) switches one off before it reads anything: a paused endpoint keeps its
 * backlog until it is resumed, and filtering that backlog row by row for test deliveries made every claim read all of
 * it (one broken receiver slowing every tenant's claims). Its test deliveries have an index of their own (0046).
 */
function dueDeliveriesOf(endpoint: string, now: string, columns: string, limit: string): string {
  const due = DUE.replaceAll('$now', now);
  return `(SELECT ${columns} FROM webhook_deliveries d
            WHERE ep.status = 'active' AND d.endpoint_id = ${endpoint} AND ${due}
            ORDER BY d.next_attempt_at, d.id LIMIT ${limit})
          UNION ALL
          (SELECT ${columns} FROM webhook_deliveries d
            WHERE ep.status <> 'active' AND d.endpoint_id = ${endpoint} AND d.event_type = 'webhook.test' AND ${due}
            ORDER BY d.next_attempt_at, d.id LIMIT ${limit})`;
}

/**
 * Joins only the endpoints `ep` with a delivery due at `now` (a parameter). Written as the endpoint's first due
 * delivery in index order, not as EXISTS: PostgreSQL turns such an EXISTS into a semi-join that it may run as a scan of
 * the whole delivery table, stepping over every delivered row, whenever its statistics lag behind a backlog that grew
 * since the last ANALYZE (measured: 3 ms per claim, a quarter of the server's CPU per delivery; docs/benchmarks.md).
 * Each branch's ORDER BY is its index's own order (endpoint_id, next_attempt_at, id), so this is one short index scan
 * per endpoint whatever the statistics say.
 */
function withDueDelivery(now: string): string {
  return `CROSS JOIN LATERAL (SELECT 1 FROM (${dueDeliveriesOf('ep.id', now, 'd.id', '1')}) AS due LIMIT 1) AS first_due`;
}

/**
 * The endpoints with a pending delivery, as a CTE: a loose index scan of the pending-deliveries index, one short
 * descent per such endpoint (the next endpoint id after the last). Visiting every endpoint row instead, most of them
 * idle, made each claim cost about a microsecond per endpoint of every workspace (10.7 ms at 10,000 endpoints). The
 * ORDER BY is the index's own, which no other index of the table gives: an index on endpoint_id alone, filtered for
 * pending rows, would step over every delivered one.
 */
const ENDPOINTS_WITH_PENDING = `endpoints_with_pending(endpoint_id) AS (
             SELECT (SELECT d.endpoint_id FROM webhook_deliveries d
                      WHERE d.status = 'pending' AND d.next_attempt_at IS NOT NULL
                      ORDER BY d.endpoint_id, d.next_attempt_at, d.id LIMIT 1)
             UNION ALL
             SELECT (SELECT d.endpoint_id FROM webhook_deliveries d
                      WHERE d.status = 'pending' AND d.next_attempt_at IS NOT NULL AND d.endpoint_id > p.endpoint_id
                      ORDER BY d.endpoint_id, d.next_attempt_at, d.id LIMIT 1)
               FROM endpoints_with_pending p WHERE p.endpoint_id IS NOT NULL
           )`;

/**
 * The two statements of claimDueDeliveries: the tenant locks, then the claim (bench/claim-explain.ts explains it).
 * Every step of the claim is MATERIALIZED, so each is planned on its own: inlined into one query they made a join
 * problem that took 1.2 ms to plan, as long as running it; apart, 0.55 ms (docs/benchmarks.md, thirteenth session).
 * The claim is still planned for each call's own values, which a generic plan of it did not match (see claimDueDeliveries).
 */
export function claimStatements(
  owner: string,
  now: Date,
  leaseUntil: Date,
  limits: ClaimLimits,
): [lock: Statement, claim: Statement] {
  const lock: Statement = {
    text: `WITH RECURSIVE ${ENDPOINTS_WITH_PENDING}, due AS MATERIALIZED (
             SELECT DISTINCT ep.tenant_id FROM endpoints_with_pending p
                    -- Looked up by primary key for each (OFFSET 0 keeps it a lookup, never a scan of every endpoint).
                    CROSS JOIN LATERAL (SELECT * FROM webhook_endpoints e WHERE e.id = p.endpoint_id OFFSET 0) AS ep
                    ${withDueDelivery('$1')}
           ), locked AS MATERIALIZED (
             SELECT tenant_id FROM due WHERE pg_try_advisory_xact_lock(hashtextextended($2 || tenant_id::text, 0))
           )
           SELECT set_config($3, coalesce(array_agg(tenant_id)::text, '{}'), true) FROM locked`,
    values: [now, CLAIM_LOCK_PREFIX, CLAIM_TENANTS_SETTING],
  };
  const claim: Statement = {
    text: `WITH tenants AS (
       -- The tenants locked by the first statement, with their room under the tenant cap (null: no cap). Leases are
       -- counted per endpoint of the tenant (the leased index's order), never by reading every lease of the service.
       SELECT t.tenant_id,
              least($4::int, $8::int - (SELECT coalesce(sum(leases.n), 0) FROM webhook_endpoints te
                                         CROSS JOIN LATERAL (SELECT count(*) AS n FROM webhook_deliveries l
                                                              WHERE l.endpoint_id = te.id AND l.status = 'pending'
                                                                AND l.lease_until > $3) AS leases
                                         WHERE te.tenant_id = t.tenant_id))::int AS room
         FROM unnest(coalesce(nullif(current_setting($9, true), ''), '{}')::uuid[]) AS t(tenant_id)
     ), endpoints AS MATERIALIZED (
       SELECT ep.id AS endpoint_id, t.tenant_id, t.room AS tenant_room,
              -- The large cap only for an endpoint proven fast: no failure in a row, a fast success within the last
              -- minute and no slow attempt since, and nothing of it in flight for over a second (it may have begun to
              -- hang). Anything else, new endpoints included, gets the small one.
              CASE WHEN h.consecutive_failures = 0 AND h.fast_until > $3 AND (h.slow_until IS NULL OR h.slow_until <= $3)
                        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries l
                                         WHERE l.endpoint_id = ep.id AND l.status = 'pending' AND l.lease_until > $3
                                           AND l.lease_until < $2::timestamptz - make_interval(secs => $7::double precision / 1000))
                   THEN $6::int ELSE $5::int END AS cap
         FROM tenants t JOIN webhook_endpoints ep ON ep.tenant_id = t.tenant_id
         JOIN webhook_endpoint_health h ON h.endpoint_id = ep.id
         ${withDueDelivery('$3')}
        WHERE t.room > 0
     ), room AS MATERIALIZED (
       -- No endpoint can need more than the worker's free slots or its tenant's room: only that many are read of it.
       SELECT e.endpoint_id, e.tenant_id,
              least(e.tenant_room, greatest(0, e.cap - (SELECT count(*) FROM webhook_deliveries l
                                                          WHERE l.endpoint_id = e.endpoint_id AND l.status = 'pending' AND l.lease_until > $3)))::int AS free
         FROM endpoints e
     ), candidates AS MATERIALIZED (
       -- Each endpoint's turns are numbered over its own candidates (at most its free slots), not over every candidate.
       SELECT c.id, r.tenant_id, c.next_attempt_at, c.endpoint_turn
         FROM room r JOIN webhook_endpoints ep ON ep.id = r.endpoint_id
        CROSS JOIN LATERAL (
              SELECT due.id, due.next_attempt_at, row_number() OVER (ORDER BY due.next_attempt_at, due.id) AS endpoint_turn
                FROM (${dueDeliveriesOf('r.endpoint_id', '$3', 'd.id, d.next_attempt_at', 'r.free')}) AS due) c
     ), turns AS MATERIALIZED (
       SELECT id, tenant_id, next_attempt_at,
              row_number() OVER (PARTITION BY tenant_id ORDER BY endpoint_turn, next_attempt_at, id) AS tenant_turn
         FROM candidates
     ), chosen AS MATERIALIZED (
       SELECT tu.id FROM turns tu JOIN tenants t USING (tenant_id)
        WHERE tu.tenant_turn <= t.room
        ORDER BY tu.tenant_turn, tu.next_attempt_at, tu.id LIMIT $4
     )
     UPDATE webhook_deliveries d SET lease_owner = $1, lease_until = $2
       FROM chosen ch, webhook_endpoints ep
      WHERE d.id = ch.id AND ep.id = d.endpoint_id AND d.status = 'pending' AND (d.lease_until IS NULL OR d.lease_until <= $3)
      RETURNING d.id, d.event_id, d.endpoint_id, d.tenant_id, d.sandbox, d.event_type, d.body, d.attempts, d.resend_of,
                ep.url, ep.status AS endpoint_status, ep.sealed_secret, ep.previous_sealed_secret, ep.previous_secret_valid_until`,
    values: [
      owner,
      leaseUntil,
      now,
      limits.limit,
      limits.perEndpoint,
      Math.max(limits.perEndpoint, limits.perFastEndpoint ?? 0),
      SLOW_ATTEMPT_MS,
      limits.perTenant ?? null,
      CLAIM_TENANTS_SETTING,
    ],
  };
  return [lock, claim];
}

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
): Promise<Map<string, number | null>> {
  const { text, values } = recordingStatement(owner, records);
  // Prepared: planning this statement cost about as much PostgreSQL CPU as running it for 8 attempts, and its plan
  // (driven by the arrays, joined by primary key) does not depend on their values (docs/benchmarks.md), nor on the
  // statistics of the moment (test/webhooks/stale-statistics.test.ts).
  const result = await queryPrepared<{ id: string; consecutive_failures: number | null }>(pool, text, values);
  return new Map(result.rows.map((row) => [row.id, row.consecutive_failures]));
}

/** The statement of recordAttempts (one statement for all the attempts given). */
export function recordingStatement(owner: string, records: readonly AttemptRecord[]): Statement {
  const column = <T>(pick: (r: AttemptRecord) => T) => records.map(pick);
  return {
    text: `WITH input AS (
       SELECT * FROM unnest($2::uuid[], $3::int[], $4::text[], $5::timestamptz[], $6::int[], $7::text[], $8::timestamptz[], $9::timestamptz[],
                            $10::jsonb[], $11::jsonb[], $12::text[], $13::int[], $14::boolean[])
         WITH ORDINALITY AS i(id, attempt, status, next_attempt_at, response_status, error, finished_at, attempted_at,
                              request_headers, response_headers, response_body, duration_ms, ok, seq)
     ), d AS (
       UPDATE webhook_deliveries w SET attempts = i.attempt, status = i.status, next_attempt_at = i.next_attempt_at, lease_owner = NULL, lease_until = NULL,
              last_response_status = i.response_status, last_error = i.error, updated_at = i.finished_at
         FROM input i
        WHERE w.id = i.id AND w.lease_owner = $1 AND w.status = 'pending'
        RETURNING w.id, w.endpoint_id
     ), logged AS (
       INSERT INTO webhook_delivery_attempts (delivery_id, attempt, attempted_at, request_headers, response_status, response_headers, response_body, duration_ms, error)
       SELECT i.id, i.attempt, i.attempted_at, i.request_headers, i.response_status, i.response_headers, i.response_body, i.duration_ms, i.error
         FROM input i JOIN d ON d.id = i.id
       ON CONFLICT (delivery_id, attempt) DO NOTHING
     ), per AS (
       SELECT d.endpoint_id, i.seq, i.ok, i.duration_ms, i.finished_at FROM input i JOIN d ON d.id = i.id
     ), runs AS (
       SELECT p.endpoint_id, bool_or(p.ok) AS reset,
              count(*) FILTER (WHERE NOT p.ok AND p.seq > coalesce(l.last_ok, 0))::int AS added,
              max(p.finished_at) FILTER (WHERE NOT p.ok OR p.duration_ms >= $15) AS slow_at,
              max(p.finished_at) FILTER (WHERE p.ok AND p.duration_ms < $15) AS fast_at
         FROM per p JOIN (SELECT endpoint_id, max(seq) FILTER (WHERE ok) AS last_ok FROM per GROUP BY endpoint_id) l USING (endpoint_id)
        GROUP BY p.endpoint_id
     ), health AS (
       -- UPDATE locks only the rows its WHERE keeps: successes to an endpoint with no failures write (and queue) nothing.
       -- Fast successes refresh fast_until only once half of it has passed: they write about once in 30 s.
       UPDATE webhook_endpoint_health h SET consecutive_failures = CASE WHEN r.reset THEN r.added ELSE h.consecutive_failures + r.added END,
              slow_until = CASE WHEN r.slow_at IS NULL THEN h.slow_until
                                ELSE greatest(h.slow_until, r.slow_at + make_interval(secs => $16::double precision / 1000)) END,
              fast_until = CASE WHEN r.fast_at IS NULL THEN h.fast_until
                                ELSE greatest(h.fast_until, r.fast_at + make_interval(secs => $16::double precision / 1000)) END
         FROM runs r
        WHERE h.endpoint_id = r.endpoint_id
          AND (r.added > 0 OR h.consecutive_failures <> 0 OR r.slow_at IS NOT NULL
               OR (r.fast_at IS NOT NULL
                   AND (h.fast_until IS NULL OR h.fast_until < r.fast_at + make_interval(secs => $16::double precision / 2000))))
        RETURNING h.endpoint_id, h.consecutive_failures
     )
     SELECT d.id, health.consecutive_failures FROM d LEFT JOIN health ON health.endpoint_id = d.endpoint_id`,
    values: [
      owner,
      column((r) => r.deliveryId),
      column((r) => r.attempt),
      column((r) => (r.ok ? 'succeeded' : r.nextAttemptAt ? 'pending' : 'failed')),
      column((r) => r.nextAttemptAt),
      column((r) => r.responseStatus),
      column((r) => r.error),
      column((r) => r.finishedAt),
      column((r) => r.attemptedAt),
      column((r) => JSON.stringify(r.requestHeaders)),
      column((r) => (r.responseHeaders === null ? null : JSON.stringify(r.responseHeaders))),
      column((r) => r.responseBody),
      column((r) => r.durationMs),
      column((r) => r.ok),
      SLOW_ATTEMPT_MS,
      SPEED_MEMORY_MS,
    ],
  };
}

export interface DeliveryLogEntry {
  id: string;
  event_id: string;
  event: string;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  next_attempt_at: string | null;
  resend_of: string | null;
  superseded_by: string | null;
  created_at: string;
  updated_at: string;
  request_body: string;
  log: {
    attempt: number;
    attempted_at: string;
    request_headers: Record<string, string>;
    response_status: number | null;
    response_headers: Record<string, string | string[]> | null;
    response_body: string | null;
    duration_ms: number;
    error: string | null;
  }[];
}

interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  status: DeliveryLogEntry['status'];
  attempts: number;
  next_attempt_at: Date | null;
  resend_of: string | null;
  superseded_by: string | null;
  created_at: Date;
  updated_at: Date;
  body: string;
  log: {
    attempt: number;
    attempted_at: string;
    request_headers: Record<string, string>;
    response_status: number | null;
    response_headers: Record<string, string | string[]> | null;
    response_body: string | null;
    duration_ms: number;
    error: string | null;
  }[];
}

/** The delivery log of one endpoint, newest first, within the retention window. `before` is the cursor (a delivery id). */
export async function listDeliveries(
  sql: Queryable,
  endpointId: string,
  options: { limit: number; before?: string; now: Date },
): Promise<{ data: DeliveryLogEntry[]; next_cursor: string | null }> {
  const since = new Date(options.now.getTime() - DELIVERY_LOG_RETENTION_MS);
  const result = await sql.query<DeliveryRow>(
    `SELECT d.id, d.event_id, d.event_type, d.status, d.attempts, d.next_attempt_at, d.resend_of, d.superseded_by, d.created_at, d.updated_at, d.body,
            coalesce((SELECT json_agg(json_build_object('attempt', a.attempt, 'attempted_at', a.attempted_at, 'request_headers', a.request_headers,
                        'response_status', a.response_status, 'response_headers', a.response_headers, 'response_body', a.response_body,
                        'duration_ms', a.duration_ms, 'error', a.error) ORDER BY a.attempt)
                        FROM webhook_delivery_attempts a WHERE a.delivery_id = d.id), '[]'::json) AS log
       FROM webhook_deliveries d
      WHERE d.endpoint_id = $1 AND d.created_at >= $2
        AND ($3::uuid IS NULL OR (d.created_at, d.id) < (SELECT created_at, id FROM webhook_deliveries WHERE id = $3))
      ORDER BY d.created_at DESC, d.id DESC
      LIMIT $4`,
    [endpointId, since, options.before ?? null, options.limit + 1],
  );
  const rows = result.rows.slice(0, options.limit);
  return {
    data: rows.map((d) => ({
      id: d.id,
      event_id: d.event_id,
      event: d.event_type,
      status: d.status,
      attempts: d.attempts,
      next_attempt_at: d.next_attempt_at ? d.next_attempt_at.toISOString() : null,
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

/** A manual resend: a new delivery (new id) of the same event with the same body, due now. */
export async function resendDelivery(
  sql: Queryable,
  endpointId: string,
  deliveryId: string,
  now: Date,
): Promise<{ id: string; event_id: string } | undefined> {
  const result = await sql.query<{ id: string; event_id: string }>(
    `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status, next_attempt_at, resend_of, created_at, updated_at)
     SELECT $1, event_id, endpoint_id, tenant_id, sandbox, event_type, body, 'pending', $4, id, $4, $4
       FROM webhook_deliveries WHERE id = $2 AND endpoint_id = $3
     RETURNING id, event_id`,
    [randomUUID(), deliveryId, endpointId, now],
  );
  if (result.rows[0]) await sql.query(`SELECT pg_notify('${DELIVERIES_CHANNEL}', '')`);
  return result.rows[0];
}

/**
 * Ends what still waits to send the same event to the same endpoint once a manual resend has succeeded: those
 * deliveries are cancelled with `superseded_by` naming the resend, so the receiver does not get the event again and
 * the delivery log says why. A delivery in flight at that moment is not stopped (at least once); its attempt is not
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
            lease_owner = NULL, lease_until = NULL, updated_at = $4
       FROM unnest($1::uuid[], $2::uuid[], $3::uuid[]) AS r(id, event_id, endpoint_id)
      CROSS JOIN LATERAL (
              SELECT o.id FROM webhook_deliveries o
               WHERE o.event_id = r.event_id AND o.endpoint_id = r.endpoint_id AND o.resend_of IS NULL
              UNION ALL
              SELECT s.id FROM webhook_deliveries s
               WHERE s.event_id = r.event_id AND s.endpoint_id = r.endpoint_id AND s.resend_of IS NOT NULL
              OFFSET 0) AS same
      WHERE d.id = same.id AND d.id <> r.id AND d.status = 'pending'`,
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
export async function purgeDeliveries(sql: Queryable, now: Date): Promise<{ purged: number; cancelled: number }> {
  const purged = await sql.query('DELETE FROM webhook_deliveries WHERE created_at < $1', [
    new Date(now.getTime() - DELIVERY_LOG_RETENTION_MS),
  ]);
  const cancelled = await sql.query(
    `UPDATE webhook_deliveries d SET status = 'cancelled', lease_owner = NULL, lease_until = NULL, updated_at = $1
      WHERE d.status = 'pending' AND NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = d.endpoint_id)`,
    [now],
  );
  return { purged: purged.rowCount ?? 0, cancelled: cancelled.rowCount ?? 0 };
}

/**
 * Deliveries due and not leased, and deliveries leased (being sent), for metrics. Every pending delivery has a next
 * attempt time (leased ones keep theirs); saying so lets the count read the pending-deliveries index (migration 0045).
 */
export async function deliveryBacklog(sql: Queryable, now: Date): Promise<{ due: number; inFlight: number }> {
  const result = await sql.query<{ due: number; in_flight: number }>(
    `SELECT count(*) FILTER (WHERE next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1))::bigint AS due,
            count(*) FILTER (WHERE lease_until > $1)::bigint AS in_flight
       FROM webhook_deliveries
      WHERE status = 'pending' AND next_attempt_at IS NOT NULL`,
    [now],
  );
  return { due: result.rows[0]?.due ?? 0, inFlight: result.rows[0]?.in_flight ?? 0 };
}
