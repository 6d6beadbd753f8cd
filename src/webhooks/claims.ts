import type pg from 'pg';
import { inTransaction } from '../storage/transaction.js';
import type { Queryable } from '../storage/postgres.js';

/*
 * Claiming due webhook deliveries: fair between endpoints and tenants, and reading only what it touches whatever
 * PostgreSQL's statistics say (test/webhooks/fairness.test.ts, stale-statistics.test.ts). Recording what was sent, the
 * delivery log and resends are in deliveries.ts.
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
}

/**
 * Leases up to `limit` due deliveries to `owner` until `leaseUntil`, fairly:
 * - each endpoint gets at most `perEndpoint` leases in flight (`perFastEndpoint` when proven fast), and each tenant at
 *   most `perTenant` over all its endpoints (every worker's live leases count), so an endpoint or a tenant whose
 *   receivers hang or answer slowly holds a bounded number of slots however large its backlog;
 * - slots go round-robin between tenants (each tenant's n-th delivery before any tenant's n+1-th), and within a
 *   tenant round-robin between its endpoints, oldest due first, so a tenant's backlog does not delay another tenant.
 * Deliveries to paused endpoints wait (webhook.test excepted). A lease left by a crashed worker ends and the delivery
 * is claimed again.
 */
export async function claimDueDeliveries(
  pool: pg.Pool,
  owner: string,
  now: Date,
  leaseUntil: Date,
  limits: ClaimLimits,
): Promise<ClaimedDelivery[]> {
  return inTransaction(pool, (tx) => claimIn(tx, { owner, now, leaseUntil, limits }));
}

/**
 * The claim's steps, in one READ COMMITTED transaction. The first locks the tenants with due deliveries (skipping
 * those another worker holds); each later statement takes its snapshot once those locks are held, so it sees every
 * lease committed by an earlier holder, and no other worker adds leases for these tenants until COMMIT: two workers
 * never claim for one tenant at once, and both caps hold across processes.
 */
export async function claimIn(sql: Queryable, claim: Claim): Promise<ClaimedDelivery[]> {
  const tenants = await lockTenantsWithDueDeliveries(sql, claim.now);
  if (tenants.length === 0) return [];
  const rooms = roomsOf(await endpointLoads(sql, tenants, claim), claim.limits);
  if (rooms.length === 0) return [];
  return leaseInTurns(sql, rooms, claim);
}

/**
 * The due deliveries of the endpoint `ep` at `$1`, oldest first, at most `limit` (an SQL expression): all of them
 * while it is active, only its webhook.test deliveries while it is paused. Two branches, of which the endpoint's
 * status switches one off before it reads anything: a paused endpoint keeps its backlog until it is resumed, and
 * filtering that backlog row by row for test deliveries made every claim read all of it. Each branch's ORDER BY is its
 * index's own order (endpoint_id, next_attempt_at, id; test deliveries have an index of their own, 0046), so it is
 * one short index scan whatever PostgreSQL's statistics say.
 */
function dueDeliveriesOfEp(limit: '1' | 'r.free'): string {
  const due = `d.status = 'pending' AND d.next_attempt_at <= $1 AND (d.lease_until IS NULL OR d.lease_until <= $1)`;
  return `(SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
            WHERE ep.status = 'active' AND d.endpoint_id = ep.id AND ${due}
            ORDER BY d.next_attempt_at, d.id LIMIT ${limit})
          UNION ALL
          (SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
            WHERE ep.status <> 'active' AND d.endpoint_id = ep.id AND d.event_type = 'webhook.test' AND ${due}
            ORDER BY d.next_attempt_at, d.id LIMIT ${limit})`;
}

/**
 * Keeps only the endpoints `ep` with a delivery due at `$1`: their first due delivery in index order. Not written as
 * EXISTS: PostgreSQL turns that into a semi-join it may run as a scan of the whole delivery table whenever its
 * statistics lag behind a backlog that grew since the last ANALYZE (test/webhooks/stale-statistics.test.ts).
 */
const WITH_DUE_DELIVERY = `CROSS JOIN LATERAL (SELECT 1 FROM (${dueDeliveriesOfEp('1')}) AS due LIMIT 1) AS first_due`;

/**
 * Step 1: takes a transaction-scoped advisory lock per tenant with a due delivery, skipping tenants another worker
 * holds; returns the tenants locked. The endpoints with a pending delivery are found by a loose index scan of the
 * pending-deliveries index (one short descent per such endpoint), never by visiting every endpoint, most of them idle.
 */
async function lockTenantsWithDueDeliveries(sql: Queryable, now: Date): Promise<string[]> {
  const result = await sql.query<{ tenant_id: string }>(
    `WITH RECURSIVE endpoints_with_pending(endpoint_id) AS (
       SELECT (SELECT d.endpoint_id FROM webhook_deliveries d
                WHERE d.status = 'pending' AND d.next_attempt_at IS NOT NULL
                ORDER BY d.endpoint_id, d.next_attempt_at, d.id LIMIT 1)
       UNION ALL
       SELECT (SELECT d.endpoint_id FROM webhook_deliveries d
                WHERE d.status = 'pending' AND d.next_attempt_at IS NOT NULL AND d.endpoint_id > p.endpoint_id
                ORDER BY d.endpoint_id, d.next_attempt_at, d.id LIMIT 1)
         FROM endpoints_with_pending p WHERE p.endpoint_id IS NOT NULL
     ), tenants_due AS MATERIALIZED (
       SELECT DISTINCT ep.tenant_id FROM endpoints_with_pending p
              -- Looked up by primary key for each (OFFSET 0 keeps it a lookup, never a scan of every endpoint).
              CROSS JOIN LATERAL (SELECT * FROM webhook_endpoints e WHERE e.id = p.endpoint_id OFFSET 0) AS ep
              ${WITH_DUE_DELIVERY}
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
}

/**
 * Step 2: the endpoints of the locked tenants with a due delivery, and their load. The live leases of every endpoint
 * of those tenants are counted once per claim, in the leased index's order, never by reading every lease of the
 * service.
 */
async function endpointLoads(sql: Queryable, tenants: string[], claim: Claim): Promise<EndpointLoad[]> {
  const leasedLongAgo = new Date(claim.leaseUntil.getTime() - SLOW_ATTEMPT_MS);
  const result = await sql.query<EndpointLoad>(
    `WITH leases AS MATERIALIZED (
       SELECT ep.id, ep.tenant_id, ep.status, l.n
         FROM unnest($2::uuid[]) AS t(tenant_id)
        -- The tenant's endpoints by its index (OFFSET 0 keeps it a lookup per tenant, never a scan of every endpoint).
        CROSS JOIN LATERAL (SELECT e.id, e.tenant_id, e.status FROM webhook_endpoints e
                             WHERE e.tenant_id = t.tenant_id OFFSET 0) AS ep
        CROSS JOIN LATERAL (SELECT count(*)::int AS n FROM webhook_deliveries l
                             WHERE l.endpoint_id = ep.id AND l.status = 'pending' AND l.lease_until > $1) AS l
     )
     SELECT ep.id AS endpoint_id, ep.tenant_id, ep.n AS in_flight,
            (SELECT sum(o.n) FROM leases o WHERE o.tenant_id = ep.tenant_id)::int AS tenant_in_flight,
            (h.consecutive_failures = 0 AND h.fast_until IS NOT NULL AND h.fast_until > $1
             AND (h.slow_until IS NULL OR h.slow_until <= $1)
             AND NOT EXISTS (SELECT 1 FROM webhook_deliveries l
                              WHERE l.endpoint_id = ep.id AND l.status = 'pending'
                                AND l.lease_until > $1 AND l.lease_until < $3)) AS proven_fast
       FROM leases ep
       JOIN webhook_endpoint_health h ON h.endpoint_id = ep.id
       ${WITH_DUE_DELIVERY}`,
    [claim.now, tenants, leasedLongAgo],
  );
  return result.rows;
}

/** How many deliveries of an endpoint this claim may lease, and how many its tenant may. */
export interface Room {
  endpoint_id: string;
  tenant_id: string;
  free: number;
  tenant_room: number;
}

/**
 * Each endpoint's room: under its own cap (the large one only when proven fast) and under its tenant's cap, and
 * never more than the worker's free slots. Endpoints with no room are left out.
 */
export function roomsOf(loads: readonly EndpointLoad[], limits: ClaimLimits): Room[] {
  const fastCap = Math.max(limits.perEndpoint, limits.perFastEndpoint ?? 0);
  return loads.flatMap((load) => {
    const tenantRoom = Math.min(limits.limit, (limits.perTenant ?? Infinity) - load.tenant_in_flight);
    const cap = load.proven_fast ? fastCap : limits.perEndpoint;
    const free = Math.min(tenantRoom, Math.max(0, cap - load.in_flight));
    return free > 0
      ? [{ endpoint_id: load.endpoint_id, tenant_id: load.tenant_id, free, tenant_room: tenantRoom }]
      : [];
  });
}

/**
 * Step 3: leases the oldest due deliveries of each endpoint, up to its room, in turns: each endpoint's deliveries are
 * numbered over its own candidates, each tenant's over its endpoints' turns, and the slots go by tenant turn, so each
 * tenant's n-th delivery comes before any tenant's n+1-th.
 */
async function leaseInTurns(sql: Queryable, rooms: readonly Room[], claim: Claim): Promise<ClaimedDelivery[]> {
  const result = await sql.query<ClaimedDelivery>(
    `WITH rooms AS (
       SELECT r.* FROM unnest($2::jsonb[]) AS room
        CROSS JOIN LATERAL jsonb_to_record(room) AS r(endpoint_id uuid, tenant_id uuid, free int, tenant_room int)
     ), candidates AS MATERIALIZED (
       SELECT c.id, r.tenant_id, r.tenant_room, c.next_attempt_at, c.endpoint_turn
         FROM rooms r
        -- Looked up by primary key for each (OFFSET 0 keeps it a lookup, never a scan of every endpoint).
        CROSS JOIN LATERAL (SELECT e.id, e.status FROM webhook_endpoints e WHERE e.id = r.endpoint_id OFFSET 0) AS ep
        CROSS JOIN LATERAL (
              SELECT due.id, due.next_attempt_at, row_number() OVER (ORDER BY due.next_attempt_at, due.id) AS endpoint_turn
                FROM (${dueDeliveriesOfEp('r.free')}) AS due) c
     ), turns AS MATERIALIZED (
       SELECT id, tenant_room, next_attempt_at,
              row_number() OVER (PARTITION BY tenant_id ORDER BY endpoint_turn, next_attempt_at, id) AS tenant_turn
         FROM candidates
     ), chosen AS MATERIALIZED (
       SELECT id FROM turns WHERE tenant_turn <= tenant_room ORDER BY tenant_turn, next_attempt_at, id LIMIT $5
     )
     UPDATE webhook_deliveries d SET lease_owner = $3, lease_until = $4
       FROM chosen ch, webhook_endpoints ep
      WHERE d.id = ch.id AND ep.id = d.endpoint_id AND d.status = 'pending' AND (d.lease_until IS NULL OR d.lease_until <= $1)
      RETURNING d.id, d.event_id, d.endpoint_id, d.tenant_id, d.sandbox, d.event_type, d.body, d.attempts, d.resend_of,
                d.sequence::text AS sequence, d.previous_event_id,
                ep.url, ep.status AS endpoint_status, ep.sealed_secret, ep.previous_sealed_secret, ep.previous_secret_valid_until`,
    [claim.now, rooms.map((room) => JSON.stringify(room)), claim.owner, claim.leaseUntil, claim.limits.limit],
  );
  return result.rows;
}
