import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import t from 'tap';
import type { Test } from 'tap';
import { claimIn } from '../../src/webhooks/claims.js';
import { recordingStatement } from '../../src/webhooks/deliveries.js';
import { checkProperty } from '../support/properties.js';
import { clearWebhookRows, insertEndpointRow, leaseAsAnotherClaim, liveLeaseRows } from './support/endpoint-rows.js';
import { BODY, NOW, connection, explainingEach, literalText, rolledBack, rowsRead } from './support/plan-reads.js';

// The claim and the recording of attempts must read what they touch (the deliveries claimed or recorded, and those in
// flight), not the backlog, whether PostgreSQL's statistics describe it or lag behind it. A backlog grows faster than
// autovacuum analyzes (20,000 deliveries fanned out in under two seconds; on a large delivery log a burst may not
// trigger an ANALYZE at all), and statistics gathered while nothing was pending hold the pending-deliveries index
// empty. In that state both once read the whole backlog per statement: the claim's lock hashed every due row, the
// claim's update and the recording walked the pending-deliveries index instead of taking the primary key. Nor may a
// claim read the backlog a paused endpoint keeps (another tenant's broken receiver), of which it sends only the
// webhook.test deliveries: it once filtered all of it for those, in every claim. Nor the endpoints with nothing to send
// (most endpoints of every workspace): it once visited each of them in every claim. Reads are counted from EXPLAIN
// ANALYZE (support/plan-reads.ts).

const OWNER = 'worker-under-test';

interface Backlog {
  /** Deliveries already delivered (their rows stay, as the delivery log). */
  delivered: number;
  /** Pending and due. */
  due: number;
  /** Pending, leased by another worker. */
  inFlight: number;
  /** In flight for another tenant (at most one endpoint's cap), whose endpoint has nothing else pending. */
  inFlightElsewhere: number;
  /** Another tenant's paused endpoint: the backlog it keeps until it is resumed, and its webhook.test deliveries. */
  paused: { held: number; tests: number };
  /** Other tenants' endpoints with nothing pending, and what they were delivered (spread over them). */
  idle: { endpoints: number; delivered: number };
  /**
   * When the statistics were last gathered: on the delivery log before a burst made the backlog (nothing pending then:
   * what autovacuum leaves a service that was quiet), or on the backlog itself.
   */
  analyzed: 'before the burst' | 'on the backlog';
}

/** Endpoints of tenants of their own with only delivered deliveries (most endpoints of a service, most of the time). */
async function writeIdleEndpoints(pool: pg.ClientBase, idle: Backlog['idle']): Promise<void> {
  if (idle.endpoints === 0) return;
  await pool.query(
    `WITH e AS (
       INSERT INTO webhook_endpoints (id, tenant_id, sandbox, url, events, status, sealed_secret, created_at, updated_at, created_tx_id, created_position)
       SELECT gen_random_uuid(), gen_random_uuid(), false, 'https://hooks.test/in', '{lead.created}', 'active', 'sealed', $1, $1, '1', 1
         FROM generate_series(1, $2) RETURNING id, tenant_id
     ), h AS (INSERT INTO webhook_endpoint_health (endpoint_id) SELECT id FROM e),
     numbered AS (SELECT id, tenant_id, row_number() OVER () - 1 AS n FROM e)
     INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status, created_at, updated_at)
     SELECT gen_random_uuid(), gen_random_uuid(), numbered.id, numbered.tenant_id, false, 'lead.created', $3, 'succeeded',
            $1::timestamptz - interval '2 hours', $1
       FROM generate_series(0, $4 - 1) g JOIN numbered ON numbered.n = g % $2`,
    [NOW, idle.endpoints, BODY, idle.delivered],
  );
}

async function writeBacklog(
  pool: pg.ClientBase,
  backlog: Backlog,
): Promise<{ endpointId: string; pausedId: string; tests: string[] }> {
  await clearWebhookRows(pool);
  const tenantId = randomUUID();
  const endpointId = await insertEndpointRow(pool, tenantId, NOW, 'lead.created');
  const pausedTenantId = randomUUID();
  const pausedId = await insertEndpointRow(pool, pausedTenantId, NOW, 'lead.created');
  await pool.query(
    `UPDATE webhook_endpoints SET status = 'paused', paused_reason = 'failures', paused_at = $2 WHERE id = $1`,
    [pausedId, NOW],
  );
  // In the order the fan-out writes them: the oldest first, so the delivered rows come first in the table.
  const insert = async (
    count: number,
    status: string,
    from: number,
    to = { endpointId, tenantId },
    type = 'lead.created',
  ) =>
    count === 0
      ? []
      : (
          await pool.query<{ id: string }>(
            `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status, next_attempt_at,
                                       created_at, updated_at)
       SELECT gen_random_uuid(), gen_random_uuid(), $1, $2, false, $8, $3, $4,
              CASE WHEN $4 = 'pending' THEN $5::timestamptz - make_interval(secs => 3600 - (g + $6) / 1000.0) END,
              $5::timestamptz - make_interval(secs => 3600 - (g + $6) / 1000.0), $5
         FROM generate_series(1, $7) g RETURNING id`,
            [to.endpointId, to.tenantId, BODY, status, NOW, from, count, type],
          )
        ).rows.map((row) => row.id);
  const insertLeased = async (count: number, from: number, to = { endpointId, tenantId }) => {
    const ids = await insert(count, 'pending', from, to);
    // Leased by another worker, as its claim would have.
    if (ids.length > 0)
      await leaseAsAnotherClaim(pool, to.endpointId, ids, 'another-worker', new Date(NOW.getTime() + 60_000));
  };
  const paused = { endpointId: pausedId, tenantId: pausedTenantId };
  await writeIdleEndpoints(pool, backlog.idle);
  const elsewhere = { tenantId: randomUUID(), endpointId: '' };
  elsewhere.endpointId = await insertEndpointRow(pool, elsewhere.tenantId, NOW, 'lead.created');
  await insert(backlog.delivered, 'succeeded', 0);
  if (backlog.analyzed === 'before the burst') await pool.query('ANALYZE webhook_deliveries');
  await insertLeased(backlog.inFlight, backlog.delivered);
  await insertLeased(backlog.inFlightElsewhere, backlog.delivered, elsewhere);
  // The paused endpoint's backlog is older than the active one's, so it would come first if it were not held.
  await insert(backlog.paused.held, 'pending', 0, paused);
  const tests = await insert(backlog.paused.tests, 'pending', backlog.delivered, paused, 'webhook.test');
  await insert(backlog.due, 'pending', backlog.delivered + backlog.inFlight);
  if (backlog.analyzed === 'on the backlog') await pool.query('ANALYZE webhook_deliveries');
  return { endpointId, pausedId, tests };
}

// A service that has delivered for a while (a delivery log of 2,000 to 4,000), then a backlog of 400 to 3,000. Not
// covered: statistics gathered on the empty table of a new database, where the planner works from default guesses
// until autovacuum's first ANALYZE of it (after its first 50 changes), and tables of a few hundred rows, which a plan
// may read whole at little cost.
const backlogs = fc.record({
  delivered: fc.integer({ min: 2_000, max: 4_000 }),
  due: fc.integer({ min: 400, max: 3_000 }),
  inFlight: fc.integer({ min: 0, max: 16 }),
  inFlightElsewhere: fc.integer({ min: 0, max: 64 }),
  paused: fc.record({ held: fc.integer({ min: 0, max: 3_000 }), tests: fc.integer({ min: 0, max: 2 }) }),
  idle: fc.record({ endpoints: fc.integer({ min: 0, max: 1_500 }), delivered: fc.integer({ min: 0, max: 3_000 }) }),
  analyzed: fc.constantFrom<Backlog['analyzed']>('before the burst', 'on the backlog'),
});

/** A connection of its own to a fresh database, closed at the end of the test. */
for (const prepared of [false, true])
  t.test(
    `a claim reads what it claims and what is in flight, not the backlog nor idle endpoints, with statistics fresh or stale${prepared ? ', on prepared plans' : ''}`,
    async (t) => claimReads(t, prepared),
  );

/**
 * The claim's steps as one claim runs them, each planned for its own values, or (`prepared`) on the generic plans of
 * statements prepared by name, which PostgreSQL may switch to after five runs on a direct connection (forced here).
 */
async function claimReads(t: Test, prepared: boolean): Promise<void> {
  const client = await connection(t);
  if (prepared) await client.query('SET plan_cache_mode = force_generic_plan');
  const limit = 32;
  let most = { deliveries: 0, endpoints: 0 };
  await checkProperty(
    t,
    'claim reads',
    fc.asyncProperty(backlogs, async (backlog) => {
      const { pausedId, tests } = await writeBacklog(client, backlog);
      // As claimDueDeliveries runs its steps (in one transaction).
      const { sql, reads } = explainingEach(client, { prepared });
      const read = await rolledBack(client, async () => {
        await claimIn(sql, {
          owner: OWNER,
          now: NOW,
          leaseUntil: new Date(NOW.getTime() + 15_000),
          limits: { limit, perEndpoint: 64, perTenant: 64 },
        });
        const total = (of: 'deliveries' | 'endpoints') => reads.reduce((sum, r) => sum + r[of], 0);
        const leased = { rows: (await liveLeaseRows(client, NOW)).filter((row) => row.owner === OWNER) };
        // Every slot taken, the paused endpoint's test deliveries among them (tenants take turns), nothing it holds.
        const ofPaused = leased.rows.filter((row) => row.endpoint_id === pausedId).map((row) => row.id);
        const testsOnly = ofPaused.length === tests.length && ofPaused.every((id) => tests.includes(id));
        const ok = leased.rows.length === limit && testsOnly;
        return {
          deliveries: ok ? total('deliveries') : Number.POSITIVE_INFINITY,
          endpoints: total('endpoints'),
          // The second step counts the endpoints' lease rows.
          countingLeases: reads[1]?.deliveries ?? Number.POSITIVE_INFINITY,
        };
      });
      most = {
        deliveries: Math.max(most.deliveries, read.deliveries),
        endpoints: Math.max(most.endpoints, read.endpoints),
      };
      // Per delivery in flight, up to five reads: the lock's and the claim's walks to the first due delivery, the
      // claim's walk to its candidates, the count of leases and the check for one in flight too long; another's, one
      // (the lock's walk over its endpoint). Per delivery claimed, three: read as a candidate (and one more), looked
      // up again to lease it. Per test delivery of the paused endpoint, as many. Reading every due or delivered row
      // (a hash of the backlog, a scan of the log) or the paused endpoint's held backlog is thousands.
      const deliveriesBound = 6 * backlog.inFlight + 2 * backlog.inFlightElsewhere + 4 * limit + 16;
      // The locked tenants' leases are counted from their lease rows: no delivery is read for that.
      const countingBound = 0;
      // Endpoints: one per delivery claimed (the lease returns its URL and secret), up to one per lease counted
      // against a tenant's cap, and a few for each endpoint with something pending; reading the idle ones (every
      // endpoint of every workspace) is up to 1,500 more.
      const endpointsBound = 2 * limit + 2 * backlog.inFlight + 16;
      return (
        read.deliveries <= deliveriesBound && read.countingLeases <= countingBound && read.endpoints <= endpointsBound
      );
    }),
    12,
  );
  t.comment(`most rows read by one claim of ${limit}: ${most.deliveries} deliveries, ${most.endpoints} endpoints`);
}

t.test('recording attempts reads the deliveries recorded, not the backlog, on a prepared plan', async (t) => {
  const client = await connection(t);
  // What PostgreSQL switches a prepared statement to after five runs when it judges the generic plan no worse; forced
  // here so that every run uses it. The plan is made at the statement's first run after the tables last changed
  // shape or statistics, which here is in the state each run writes.
  await client.query('SET plan_cache_mode = force_generic_plan');
  const { text } = recordingStatement(OWNER, []);
  await client.query(`PREPARE recording AS ${text}`);
  let most = 0;
  await checkProperty(
    t,
    'recording reads',
    fc.asyncProperty(backlogs, fc.integer({ min: 1, max: 8 }), async (backlog, attempts) => {
      await writeBacklog(client, backlog);
      const leased = await client.query<{ id: string; endpoint_id: string }>(
        `SELECT id, endpoint_id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at IS NOT NULL
          ORDER BY next_attempt_at LIMIT $1`,
        [attempts],
      );
      for (const endpoint of new Set(leased.rows.map((row) => row.endpoint_id))) {
        const ids = leased.rows.filter((row) => row.endpoint_id === endpoint).map((row) => row.id);
        await leaseAsAnotherClaim(client, endpoint, ids, OWNER, new Date(NOW.getTime() + 15_000));
      }
      const { values } = recordingStatement(
        OWNER,
        leased.rows.map((row) => ({
          deliveryId: row.id,
          leaseUntil: NOW.getTime() + 15_000,
          attempt: 1,
          ok: true,
          nextAttemptAt: null,
          attemptedAt: NOW,
          finishedAt: NOW,
          requestHeaders: { 'content-type': 'application/json' },
          responseStatus: 200,
          responseHeaders: {},
          responseBody: 'ok',
          durationMs: 3,
          error: null,
        })),
      );
      // EXECUTE takes no parameters of its own: the values go as literals, in the text form pg would send them.
      const literals = values.map((v) => client.escapeLiteral(literalText(v)));
      const read = await rolledBack(client, async () => {
        const rows = (await rowsRead(client, `EXECUTE recording(${literals.join(', ')})`)).deliveries;
        const recorded = await client.query(
          "SELECT 1 FROM webhook_deliveries WHERE status = 'succeeded' AND attempts = 1",
        );
        const stillLeased = (await liveLeaseRows(client, NOW)).filter((row) => row.owner === OWNER).length;
        return recorded.rowCount === attempts && stillLeased === 0 ? rows : Number.POSITIVE_INFINITY;
      });
      most = Math.max(most, read / attempts);
      // One primary-key lookup per attempt; walking the pending deliveries instead reads every one of them.
      return read <= 2 * attempts;
    }),
    12,
  );
  t.comment(`most rows read per recorded attempt: ${most.toFixed(1)}`);
});
