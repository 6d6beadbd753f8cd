import type pg from 'pg';
import { inTransaction } from '../storage/transaction.js';
import type { Statement } from '../storage/postgres.js';

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
  const result = await inTransaction(pool, (tx) => tx.query<ClaimedDelivery>(claim.text, claim.values), [lock]);
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
    text: `WITH locked AS (
       -- The tenants locked by the first statement.
       SELECT tenant_id FROM unnest(coalesce(nullif(current_setting($9, true), ''), '{}')::uuid[]) AS t(tenant_id)
     ), leases AS MATERIALIZED (
       -- Each endpoint of a locked tenant with its deliveries in flight (every worker's live leases), counted once per
       -- claim in the leased index's order, never by reading every lease of the service.
       SELECT te.id AS endpoint_id, te.tenant_id, l.n
         FROM locked t
        -- The tenant's endpoints by its index (OFFSET 0 keeps it a lookup per tenant, never a scan of every endpoint).
        CROSS JOIN LATERAL (SELECT e.id, e.tenant_id FROM webhook_endpoints e WHERE e.tenant_id = t.tenant_id OFFSET 0) AS te
        CROSS JOIN LATERAL (SELECT count(*) AS n FROM webhook_deliveries l
                             WHERE l.endpoint_id = te.id AND l.status = 'pending' AND l.lease_until > $3) AS l
     ), tenants AS (
       -- Each locked tenant's room under the tenant cap (null: no cap).
       SELECT t.tenant_id,
              least($4::int, $8::int - (SELECT coalesce(sum(ls.n), 0) FROM leases ls WHERE ls.tenant_id = t.tenant_id))::int AS room
         FROM locked t
     ), endpoints AS MATERIALIZED (
       SELECT ep.id AS endpoint_id, t.tenant_id, t.room AS tenant_room, ls.n AS in_flight,
              -- The large cap only for an endpoint proven fast: no failure in a row, a fast success within the last
              -- minute and no slow attempt since, and nothing of it in flight for over a second (it may have begun to
              -- hang). Anything else, new endpoints included, gets the small one.
              CASE WHEN h.consecutive_failures = 0 AND h.fast_until > $3 AND (h.slow_until IS NULL OR h.slow_until <= $3)
                        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries l
                                         WHERE l.endpoint_id = ep.id AND l.status = 'pending' AND l.lease_until > $3
                                           AND l.lease_until < $2::timestamptz - make_interval(secs => $7::double precision / 1000))
                   THEN $6::int ELSE $5::int END AS cap
         FROM tenants t JOIN webhook_endpoints ep ON ep.tenant_id = t.tenant_id
         JOIN leases ls ON ls.endpoint_id = ep.id
         JOIN webhook_endpoint_health h ON h.endpoint_id = ep.id
         ${withDueDelivery('$3')}
        WHERE t.room > 0
     ), room AS MATERIALIZED (
       -- No endpoint can need more than the worker's free slots or its tenant's room: only that many are read of it.
       SELECT e.endpoint_id, e.tenant_id,
              least(e.tenant_room, greatest(0, e.cap - e.in_flight))::int AS free
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
