import type pg from 'pg';
import { inTransaction } from '../storage/transaction.js';
import type { Queryable } from '../storage/postgres.js';

/*
 * Claiming due webhook deliveries: fair between endpoints and tenants, and reading only what it touches whatever
 * PostgreSQL's statistics say or how large the backlog is (test/webhooks/fairness.test.ts, stale-statistics.test.ts).
 * The leases are rows of their own (webhook_leases, migration 340), never columns of the deliveries nor of the
 * endpoints' queue rows: a delivery's row is written when fanned out and with each attempt's outcome only, and the
 * recording of an attempt does not wait for the claims of its endpoint. Recording what was sent, the delivery log and
 * resends are in deliveries.ts.
 */

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
  /** The endpoint's number for this delivery (bigint, as text) and the event it was sent just before it. */
  sequence: string | null;
  previous_event_id: string | null;
  url: string;
  endpoint_status: 'active' | 'paused';
  sealed_secret: string;
  previous_sealed_secret: string | null;
  previous_secret_valid_until: Date | null;
  /**
   * The end of this claim's lease (ms since the epoch): its attempt is recorded only while the queue row holds this
   * very lease, so an attempt sent under an earlier lease that lapsed is not recorded under a newer claim's.
   */
  lease_until: number;
}

/** Deliveries in flight at once to one endpoint, across all workers: a hanging or slow endpoint holds no more slots. */
export const DEFAULT_PER_ENDPOINT_IN_FLIGHT = 16;
/**
 * In-flight deliveries allowed to an endpoint proven fast: a healthy receiver answering in a few ms is held back by
 * how long each lease lives (claim, send, recording), not by its own speed, so it needs more slots (docs/decisions.md).
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

/** What one claim asks for. */
export interface Claim {
  owner: string;
  now: Date;
  leaseUntil: Date;
  limits: ClaimLimits;
  /**
   * Told, when the claim leaves an endpoint held back by its rate, the earliest instant (ms) one of them may have its
   * next delivery: the worker wakes then rather than at its next poll.
   */
  onThrottled?: (openAtMs: number) => void;
}

/**
 * The window an endpoint's rate is counted over (`rate_limit_per_second`): a delivery counts from its claim until
 * this long after its attempt ended, so its receiver never sees more than the rate in any one second, however long
 * each request took on the way (docs/decisions.md, "A per-endpoint rate").
 */
export const RATE_WINDOW_MS = 1_000;
/** Attempt ends are kept in the rate's log rounded up to this (ms): at most 100 entries a second, held ≤ 10 ms longer. */
export const RATE_LOG_STEP_MS = 10;

/**
 * Leases up to `limit` due deliveries to `owner` until `leaseUntil`, fairly:
 * - each endpoint gets at most `perEndpoint` leases in flight (`perFastEndpoint` when proven fast), and each tenant at
 *   most `perTenant` over all its endpoints (every worker's live leases count), so an endpoint or a tenant whose
 *   receivers hang or answer slowly holds a bounded number of slots however large its backlog;
 * - slots go round-robin between tenants (each tenant's n-th delivery before any tenant's n+1-th), and within a
 *   tenant round-robin between its endpoints, oldest due first, so a tenant's backlog does not delay another tenant.
 * - an endpoint with a rate (`rate_limit_per_second`) gets no more than its rate less what is in flight to it and what
 *   ended within the last second (RATE_WINDOW_MS), so its receiver never sees more than the rate in any one second;
 *   the slots it cannot take go to the other endpoints.
 * Deliveries to paused endpoints wait (webhook.test excepted). A lease left by a crashed worker ends and the delivery
 * is claimed again.
 */
export async function claimDueDeliveries(
  pool: pg.Pool,
  owner: string,
  now: Date,
  leaseUntil: Date,
  limits: ClaimLimits,
  options: { named?: boolean; onThrottled?: (openAtMs: number) => void } = {},
): Promise<ClaimedDelivery[]> {
  // Prepared by name on connections straight to PostgreSQL (`named`), as the event store's statements: planning the
  // last step cost more than running it. Their generic plans read what a custom plan reads
  // (stale-statistics.test.ts); behind a transaction pooler they stay unnamed.
  return inTransaction(
    pool,
    (tx) => claimIn(tx, { owner, now, leaseUntil, limits, onThrottled: options.onThrottled }),
    {
      namedStatements: options.named ?? false,
    },
  );
}

/**
 * The claim's steps, in one READ COMMITTED transaction. The first locks the tenants with an endpoint queue due
 * (skipping those another worker holds); each later statement takes its snapshot once those locks are held, so it
 * sees every lease committed by an earlier holder, and no other worker adds leases for these tenants until COMMIT: two
 * workers never claim for one tenant at once, and both caps hold across processes. The leases are rows of
 * webhook_leases, never written on the deliveries (docs/architecture.md, "Work queues").
 */
export async function claimIn(sql: Queryable, claim: Claim): Promise<ClaimedDelivery[]> {
  const tenants = await lockTenantsWithDueQueues(sql, claim.now);
  if (tenants.length === 0) return [];
  const rooms = roomsOf(await endpointLoads(sql, tenants, claim), claim.limits);
  if (rooms.length === 0) return [];
  await lockQueues(sql, rooms);
  const claimed = await leaseInTurns(sql, rooms, claim);
  const openAt = rateOpensAt(rooms, claimed, claim.now.getTime());
  if (openAt !== null) claim.onThrottled?.(openAt);
  return claimed;
}

/**
 * When the earliest of the endpoints this claim left at their rate may send again (ms), or null when it left none
 * there: an endpoint is at its rate once its deliveries in flight, those that ended within the last second and this
 * claim's make its rate. It opens a second after the oldest of those ends: its oldest ended one, or, with all of them
 * still in flight, a second from now at the soonest (the claim statement's `throttled_until` is the same reckoning).
 */
export function rateOpensAt(rooms: readonly Room[], claimed: readonly ClaimedDelivery[], nowMs: number): number | null {
  let earliest: number | null = null;
  for (const room of rooms) {
    if (room.rate_limit === null) continue;
    const taken = claimed.filter((delivery) => delivery.endpoint_id === room.endpoint_id).length;
    if (room.rate_used + taken < room.rate_limit) continue;
    const openAt = (room.rate_oldest ?? nowMs) + RATE_WINDOW_MS;
    if (earliest === null || openAt < earliest) earliest = openAt;
  }
  return earliest;
}

/**
 * Step 3: locks the queue rows of the endpoints with room, in endpoint order (as the recording of attempts locks
 * them). A delivery is queued in a transaction that locks its endpoint's row (the triggers of migration 200): once
 * the locks are held, the next statement's snapshot sees every delivery queued before, so the `due_at` it sets from
 * what it read never hides one.
 */
async function lockQueues(sql: Queryable, rooms: readonly Room[]): Promise<void> {
  await sql.query(
    'SELECT endpoint_id FROM webhook_queues WHERE endpoint_id = ANY ($1::uuid[]) ORDER BY endpoint_id FOR UPDATE',
    [rooms.map((room) => room.endpoint_id)],
  );
}

/**
 * The next deliveries of the endpoint `ep`, oldest due first, at most `limit` (an SQL expression), leaving out those
 * under a lease (`held`, an array of delivery ids): all of them while it is active, only its webhook.test deliveries
 * while it is paused. Two branches, of which the endpoint's status switches one off before it reads anything: a
 * paused endpoint keeps its backlog until it is resumed. Each branch's ORDER BY is its
 * partial index's own order (endpoint_id, next_attempt_at, id; test deliveries have an index of their own, 0046), so
 * it is one short index scan whatever PostgreSQL's statistics say: it reads the endpoint's leased deliveries and the
 * few it returns, never the rest of its backlog. Not bounded by the time: the first one not due says when it is.
 */
function nextDeliveriesOfEp(limit: string, held: string): string {
  const queued = `d.status = 'pending' AND d.next_attempt_at IS NOT NULL AND d.id <> ALL (${held})`;
  return `(SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
            WHERE ep.status = 'active' AND d.endpoint_id = ep.id AND ${queued}
            ORDER BY d.next_attempt_at, d.id LIMIT ${limit})
          UNION ALL
          (SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
            WHERE ep.status <> 'active' AND d.endpoint_id = ep.id AND d.event_type = 'webhook.test' AND ${queued}
            ORDER BY d.next_attempt_at, d.id LIMIT ${limit})`;
}

/** The number of an endpoint's live leases (SQL, given its id and the claim's instant in ms). */
const liveLeaseCount = (endpointId: string, nowMs: string) =>
  `(SELECT count(*)::int FROM webhook_leases l WHERE l.endpoint_id = ${endpointId} AND l.lease_until > ${nowMs})`;

/**
 * Step 1: takes a transaction-scoped advisory lock per tenant with an endpoint queue due, skipping tenants another
 * worker holds; returns the tenants locked. It reads the due queue rows (one per endpoint with work due), never a
 * delivery.
 */
async function lockTenantsWithDueQueues(sql: Queryable, now: Date): Promise<string[]> {
  const result = await sql.query<{ tenant_id: string }>(
    `WITH tenants_due AS MATERIALIZED (
       SELECT DISTINCT q.tenant_id FROM webhook_queues q WHERE q.due_at <= $1
     )
     SELECT tenant_id FROM tenants_due WHERE pg_try_advisory_xact_lock(hashtextextended($2 || tenant_id::text, 0))`,
    [now, CLAIM_LOCK_PREFIX],
  );
  return result.rows.map((row) => row.tenant_id);
}

/** An endpoint of a locked tenant with a due delivery: what is in flight to it and to its tenant, and its speed. */
export interface EndpointLoad {
  endpoint_id: string;
  tenant_id: string;
  /** Its deliveries in flight (every worker's live leases). */
  in_flight: number;
  /** Its tenant's deliveries in flight, over all the tenant's endpoints. */
  tenant_in_flight: number;
  /**
   * No failure in a row, a fast success within the last minute and no slow attempt since, and nothing in flight for
   * over a second (it may have begun to hang). New endpoints are not.
   */
  proven_fast: boolean;
  /** Its rate (`rate_limit_per_second`); null or absent: no limit. */
  rate_limit?: number | null;
  /**
   * What counts against its rate now: its deliveries in flight and those whose attempt ended within the last second
   * (its queue row's `rate_log`); counted only when it has a rate.
   */
  rate_used?: number;
  /** The oldest end in that log within the last second (ms since the epoch), or null. */
  rate_oldest?: number | null;
}

/**
 * Step 2: the endpoints of the locked tenants with a queue due, and their load. The live leases of each tenant are
 * counted from its endpoints' lease rows (webhook_leases, migration 340), never from the deliveries. An endpoint with
 * a rate has its last second's attempt ends counted from its queue row's `rate_log` (at most one entry per 10 ms).
 */
async function endpointLoads(sql: Queryable, tenants: string[], claim: Claim): Promise<EndpointLoad[]> {
  const leasedLongAgo = claim.leaseUntil.getTime() - SLOW_ATTEMPT_MS;
  const result = await sql.query<EndpointLoad>(
    `WITH queues AS MATERIALIZED (
       SELECT q.endpoint_id, q.tenant_id, q.due_at, q.rate_log, ${liveLeaseCount('q.endpoint_id', '$3::bigint')} AS n,
              EXISTS (SELECT 1 FROM webhook_leases l
                       WHERE l.endpoint_id = q.endpoint_id AND l.lease_until > $3::bigint AND l.lease_until < $4::bigint)
                AS hanging
         FROM webhook_queues q WHERE q.tenant_id = ANY ($2::uuid[])
     )
     SELECT q.endpoint_id, q.tenant_id, q.n AS in_flight,
            (SELECT sum(o.n) FROM queues o WHERE o.tenant_id = q.tenant_id)::int AS tenant_in_flight,
            (h.consecutive_failures = 0 AND h.fast_until IS NOT NULL AND h.fast_until > $1
             AND (h.slow_until IS NULL OR h.slow_until <= $1) AND NOT q.hanging) AS proven_fast,
            e.rate_limit_per_second AS rate_limit,
            CASE WHEN e.rate_limit_per_second IS NULL THEN 0 ELSE q.n + coalesce(r.used, 0) END::int AS rate_used,
            r.oldest AS rate_oldest
       FROM queues q
       JOIN webhook_endpoint_health h ON h.endpoint_id = q.endpoint_id
       -- Looked up by primary key for each queue due (OFFSET 0 keeps it a lookup, never a scan of every endpoint).
       LEFT JOIN LATERAL (SELECT ep.rate_limit_per_second FROM webhook_endpoints ep
                           WHERE ep.id = q.endpoint_id OFFSET 0) e ON true
       LEFT JOIN LATERAL (
             SELECT sum(l.value::int) AS used, min(l.key::bigint)::float8 AS oldest
               FROM jsonb_each_text(q.rate_log) l
              WHERE e.rate_limit_per_second IS NOT NULL AND l.key::bigint > $3::bigint - $5::bigint) r ON true
      WHERE q.due_at <= $1`,
    [claim.now, tenants, claim.now.getTime(), leasedLongAgo, RATE_WINDOW_MS],
  );
  return result.rows;
}

/** How many deliveries of an endpoint this claim may lease, and how many its tenant may. */
export interface Room {
  endpoint_id: string;
  tenant_id: string;
  free: number;
  tenant_room: number;
  /** Its rate, what counts against it and the oldest end in its log (as in EndpointLoad). */
  rate_limit: number | null;
  rate_used: number;
  rate_oldest: number | null;
}

/**
 * Each endpoint's room: under its own cap (the large one only when proven fast), under its tenant's cap and under
 * what its rate leaves of the last second, and never more than the worker's free slots. Endpoints with no room are
 * left out, except one held back by its rate: it stays with no room, so the claim moves its `due_at` to when the rate
 * lets it send again rather than finding it due at every claim until then.
 */
export function roomsOf(loads: readonly EndpointLoad[], limits: ClaimLimits): Room[] {
  const fastCap = Math.max(limits.perEndpoint, limits.perFastEndpoint ?? 0);
  return loads.flatMap((load) => {
    const tenantRoom = Math.min(limits.limit, (limits.perTenant ?? Infinity) - load.tenant_in_flight);
    const cap = load.proven_fast ? fastCap : limits.perEndpoint;
    const rateLimit = load.rate_limit ?? null;
    const rateUsed = load.rate_used ?? 0;
    const rateRoom = rateLimit === null ? Infinity : Math.max(0, rateLimit - rateUsed);
    const free = Math.min(tenantRoom, Math.max(0, cap - load.in_flight), rateRoom);
    const room = {
      endpoint_id: load.endpoint_id,
      tenant_id: load.tenant_id,
      free: Math.max(0, free),
      tenant_room: tenantRoom,
      rate_limit: rateLimit,
      rate_used: rateUsed,
      rate_oldest: load.rate_oldest ?? null,
    };
    return free > 0 || rateRoom === 0 ? [room] : [];
  });
}

/**
 * Step 4: leases the oldest due deliveries of each endpoint, up to its room, in turns: each endpoint's deliveries are
 * numbered over its own candidates, each tenant's over its endpoints' turns, and the slots go by tenant turn, so each
 * tenant's n-th delivery comes before any tenant's n+1-th. Each lease is a row of webhook_leases (migration 340), and
 * the endpoints' leases that ran out are dropped; each queue row's `due_at` becomes when it next has something to
 * claim: its first delivery not leased, or its first lease to end.
 */
async function leaseInTurns(sql: Queryable, rooms: readonly Room[], claim: Claim): Promise<ClaimedDelivery[]> {
  const result = await sql.query<Omit<ClaimedDelivery, 'lease_until'>>(
    `WITH rooms AS (
       SELECT r.* FROM unnest($2::jsonb[]) AS room
        CROSS JOIN LATERAL jsonb_to_record(room)
             AS r(endpoint_id uuid, tenant_id uuid, free int, tenant_room int, rate_limit int, rate_used int,
                  rate_oldest float8)
     ), seen AS MATERIALIZED (
       SELECT l.endpoint_id, l.delivery_id, l.lease_until FROM webhook_leases l
        WHERE l.endpoint_id IN (SELECT endpoint_id FROM rooms)
     ), pruned AS (
       -- Leases that ran out go. One a recording holds at this moment (its attempt being written) is left to it, and
       -- its delivery is not claimed now: the next claim finds it recorded, or its lease gone.
       DELETE FROM webhook_leases l
        USING (SELECT o.delivery_id, o.lease_until FROM webhook_leases o
                WHERE o.endpoint_id IN (SELECT endpoint_id FROM rooms) AND o.lease_until <= $6::bigint
                  FOR UPDATE SKIP LOCKED) o
        WHERE l.delivery_id = o.delivery_id AND l.lease_until = o.lease_until
        RETURNING l.delivery_id, l.lease_until
     ), live AS MATERIALIZED (
       SELECT rm.endpoint_id,
              coalesce((SELECT array_agg(s.delivery_id) FROM seen s
                         WHERE s.endpoint_id = rm.endpoint_id
                           AND NOT EXISTS (SELECT 1 FROM pruned p
                                            WHERE p.delivery_id = s.delivery_id AND p.lease_until = s.lease_until)),
                       '{}'::uuid[]) AS held,
              -- The first lease to end, or a lapsed one a recording holds: the endpoint is due again then.
              (SELECT min(s.lease_until) FROM seen s
                WHERE s.endpoint_id = rm.endpoint_id
                  AND NOT EXISTS (SELECT 1 FROM pruned p
                                   WHERE p.delivery_id = s.delivery_id AND p.lease_until = s.lease_until)) AS first_end,
              rm.rate_limit, rm.rate_used, rm.rate_oldest
         FROM rooms rm
     ), candidates AS MATERIALIZED (
       SELECT c.id, r.endpoint_id, r.tenant_id, r.tenant_room, r.free, c.next_attempt_at, c.endpoint_turn
         FROM rooms r JOIN live lv ON lv.endpoint_id = r.endpoint_id
        -- Looked up by primary key for each (OFFSET 0 keeps it a lookup, never a scan of every endpoint).
        CROSS JOIN LATERAL (SELECT e.id, e.status FROM webhook_endpoints e WHERE e.id = r.endpoint_id OFFSET 0) AS ep
        CROSS JOIN LATERAL (
              SELECT n.id, n.next_attempt_at, row_number() OVER (ORDER BY n.next_attempt_at, n.id) AS endpoint_turn
                FROM (${nextDeliveriesOfEp('r.free + 1', 'lv.held')}) AS n) c
     ), turns AS MATERIALIZED (
       SELECT id, endpoint_id, tenant_room, next_attempt_at,
              row_number() OVER (PARTITION BY tenant_id ORDER BY endpoint_turn, next_attempt_at, id) AS tenant_turn
         FROM candidates WHERE endpoint_turn <= free AND next_attempt_at <= $1
     ), chosen AS MATERIALIZED (
       SELECT id, endpoint_id, tenant_turn, next_attempt_at FROM turns WHERE tenant_turn <= tenant_room
        ORDER BY tenant_turn, next_attempt_at, id LIMIT $5
     ), rated AS MATERIALIZED (
       -- An endpoint this claim leaves at its rate (in flight, ended within the second and chosen now make it) opens a
       -- second after the oldest of them ends: its oldest logged end, or a second from now at the soonest.
       SELECT lv.endpoint_id,
              CASE WHEN lv.rate_limit IS NOT NULL
                     AND lv.rate_used + (SELECT count(*) FROM chosen ch WHERE ch.endpoint_id = lv.endpoint_id) >= lv.rate_limit
                   THEN to_timestamp((coalesce(lv.rate_oldest, $6::bigint) + $7::bigint) / 1000.0)
              END AS throttled_until
         FROM live lv
     ), leased AS (
       INSERT INTO webhook_leases (delivery_id, lease_until, endpoint_id, owner)
       SELECT ch.id, $4::bigint, ch.endpoint_id, $3::text FROM chosen ch
     ), queued AS (
       UPDATE webhook_queues q
          SET due_at = CASE WHEN nx.due_at IS NULL THEN NULL ELSE greatest(nx.due_at, rt.throttled_until) END,
              rate_limit = lv.rate_limit,
              throttled_until = rt.throttled_until
         FROM live lv
         JOIN rated rt ON rt.endpoint_id = lv.endpoint_id
        CROSS JOIN LATERAL (
              SELECT least(
                (SELECT min(c.next_attempt_at) FROM candidates c
                  WHERE c.endpoint_id = lv.endpoint_id AND c.id NOT IN (SELECT id FROM chosen)),
                to_timestamp(least(lv.first_end,
                  CASE WHEN EXISTS (SELECT 1 FROM chosen ch WHERE ch.endpoint_id = lv.endpoint_id) THEN $4::bigint END)
                  / 1000.0)) AS due_at) nx
        WHERE q.endpoint_id = lv.endpoint_id
     )
     SELECT d.id, d.event_id, d.endpoint_id, d.tenant_id, d.sandbox, d.event_type, d.body, d.attempts, d.resend_of,
            d.sequence::text AS sequence, d.previous_event_id,
            ep.url, ep.status AS endpoint_status, ep.sealed_secret, ep.previous_sealed_secret, ep.previous_secret_valid_until
       FROM chosen ch
       JOIN webhook_deliveries d ON d.id = ch.id
       JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
      -- In turns, so the worker starts each endpoint's oldest first.
      ORDER BY ch.tenant_turn, ch.next_attempt_at, ch.id`,
    [
      claim.now,
      rooms.map((room) => JSON.stringify(room)),
      claim.owner,
      claim.leaseUntil.getTime(),
      claim.limits.limit,
      claim.now.getTime(),
      RATE_WINDOW_MS,
    ],
  );
  return result.rows.map((row) => ({ ...row, lease_until: claim.leaseUntil.getTime() }));
}
