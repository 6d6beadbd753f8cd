import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import t from 'tap';
import { claimDueDeliveries, type ClaimedDelivery } from '../../src/webhooks/claims.js';
import { recordAttempts, scheduleResumedBacklog } from '../../src/webhooks/deliveries.js';
import { RETRY_DELAYS_MS, RETRY_JITTER, nextAttemptAt } from '../../src/webhooks/retry-schedule.js';
import { runCommand } from '../../src/commands/run-command.js';
import type { CommandContext } from '../../src/events/types.js';
import { seedWorkspace } from '../support/app.js';
import { freshDatabase } from '../support/db.js';
import { faultInjector } from '../support/fault-injection.js';
import { checkProperty } from '../support/properties.js';
import { clearWebhookRows, insertEndpointRow, leaseAsAnotherClaim, liveLeaseRows } from './support/endpoint-rows.js';
import { resourcePayload, webhookHarness } from './support/harness.js';
import { sleep, waitFor } from './support/receiver.js';

// The claim statement on its own, against real PostgreSQL: endpoints and deliveries are written as the fan-out and
// the endpoint projection would write them, then claimed as workers claim them.

const NOW = new Date('2026-11-20T10:00:00.000Z');
const LEASE_UNTIL = new Date(NOW.getTime() + 15_000);

interface EndpointPlan {
  /** Due deliveries waiting. */
  due: number;
  /** Deliveries already in flight under a live lease of another worker. */
  inFlight: number;
}

const insertEndpoint = (pool: pg.Pool, tenantId: string) => insertEndpointRow(pool, tenantId, NOW);

async function insertDeliveries(
  pool: pg.Pool,
  endpointId: string,
  tenantId: string,
  count: number,
  options: { leased?: boolean; dueFrom?: Date } = {},
): Promise<void> {
  if (count === 0) return;
  const dueFrom = options.dueFrom ?? new Date(NOW.getTime() - 60_000);
  const inserted = await pool.query<{ id: string }>(
    `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status, next_attempt_at,
                                     created_at, updated_at)
     SELECT gen_random_uuid(), gen_random_uuid(), $1, $2, false, 'document.uploaded', '{}', 'pending',
            $3::timestamptz + make_interval(secs => g / 1000.0), $3::timestamptz + make_interval(secs => g / 1000.0), $3
       FROM generate_series(1, $4) g
     RETURNING id`,
    [endpointId, tenantId, dueFrom, count],
  );
  // In flight: leased by another worker, as its claim would have.
  if (options.leased)
    await leaseAsAnotherClaim(
      pool,
      endpointId,
      inserted.rows.map((row) => row.id),
      'another-worker',
      LEASE_UNTIL,
    );
}

async function liveLeases(pool: pg.Pool): Promise<Map<string, number>> {
  return countBy(await liveLeaseRows(pool, NOW), (row) => row.endpoint_id);
}

t.test('claims are capped per endpoint and shared between tenants, whatever the backlogs', async (t) => {
  const { pool } = await freshDatabase(t, undefined, 5);
  const endpointPlan = fc.record({ due: fc.integer({ min: 0, max: 40 }), inFlight: fc.integer({ min: 0, max: 6 }) });
  const scenario = fc.record({
    // Tenant 0 is the noisy one: one endpoint with a backlog of hundreds, already holding leases.
    noisyBacklog: fc.integer({ min: 50, max: 400 }),
    others: fc.array(fc.array(endpointPlan, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 3 }),
    perEndpoint: fc.integer({ min: 1, max: 8 }),
    limits: fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 4 }),
  });
  await checkProperty(
    t,
    'fair claims',
    fc.asyncProperty(scenario, async ({ noisyBacklog, others, perEndpoint, limits }) => {
      await clearWebhookRows(pool);
      const noisyTenant = randomUUID();
      const noisy = await insertEndpoint(pool, noisyTenant);
      await insertDeliveries(pool, noisy, noisyTenant, noisyBacklog);
      await insertDeliveries(pool, noisy, noisyTenant, perEndpoint, { leased: true });
      const plans = new Map<string, { tenantId: string; plan: EndpointPlan }>();
      for (const endpoints of others) {
        const tenantId = randomUUID();
        for (const plan of endpoints) {
          const id = await insertEndpoint(pool, tenantId);
          await insertDeliveries(pool, id, tenantId, plan.due);
          await insertDeliveries(pool, id, tenantId, Math.min(plan.inFlight, perEndpoint), { leased: true });
          plans.set(id, { tenantId, plan });
        }
      }
      // Several workers claim one after the other, each with its own number of free slots.
      for (const [i, limit] of limits.entries()) {
        const before = await liveLeases(pool);
        const claimed = await claimDueDeliveries(pool, `worker-${i}`, NOW, LEASE_UNTIL, { limit, perEndpoint });
        const after = await liveLeases(pool);
        for (const n of after.values()) if (n > perEndpoint) return false; // the cap holds
        if (claimed.some((d) => d.endpoint_id === noisy)) return false; // the saturated endpoint gets nothing more
        // Claimable now: per endpoint, the due deliveries not yet leased, up to its room under the cap.
        const claimable = new Map<string, number>();
        for (const [id, { tenantId, plan }] of plans) {
          const leasedByUs = (before.get(id) ?? 0) - Math.min(plan.inFlight, perEndpoint);
          const room = Math.max(0, perEndpoint - (before.get(id) ?? 0));
          const left = plan.due - leasedByUs;
          claimable.set(tenantId, (claimable.get(tenantId) ?? 0) + Math.min(room, left));
        }
        const total = [...claimable.values()].reduce((a, b) => a + b, 0);
        if (claimed.length !== Math.min(limit, total)) return false; // free slots are used when there is work
        const byTenant = countBy(claimed, (d) => d.tenant_id);
        const waiting = [...claimable.entries()].filter(([, n]) => n > 0);
        // Round-robin: with at least one slot per waiting tenant, each gets at least its equal share (or all it has).
        const share = Math.floor(limit / Math.max(1, waiting.length));
        for (const [tenantId, n] of waiting) if ((byTenant.get(tenantId) ?? 0) < Math.min(n, share)) return false;
      }
      return true;
    }),
    40,
  );
});

t.test('two workers claiming at once keep to the cap between them', async (t) => {
  const { pool } = await freshDatabase(t, undefined, 10);
  const tenant = randomUUID();
  const endpoint = await insertEndpoint(pool, tenant);
  await insertDeliveries(pool, endpoint, tenant, 500);
  const claims = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      claimDueDeliveries(pool, `worker-${i}`, NOW, LEASE_UNTIL, { limit: 100, perEndpoint: 10 }),
    ),
  );
  const ids = claims.flat().map((d) => d.id);
  t.equal(new Set(ids).size, ids.length, 'no delivery is claimed twice');
  t.ok(ids.length <= 10 && ids.length > 0, `${ids.length} in flight, at most the cap of 10`);
  t.equal((await liveLeases(pool)).get(endpoint), ids.length);
});

t.test('a lease that ran out makes its delivery claimable again', async (t) => {
  const { pool } = await freshDatabase(t, undefined, 5);
  const tenant = randomUUID();
  const endpoint = await insertEndpoint(pool, tenant);
  await insertDeliveries(pool, endpoint, tenant, 3);
  const first = await claimDueDeliveries(pool, 'crashed', NOW, LEASE_UNTIL, { limit: 10, perEndpoint: 10 });
  t.equal(first.length, 3);
  t.same(await claimDueDeliveries(pool, 'other', NOW, LEASE_UNTIL, { limit: 10, perEndpoint: 10 }), []);
  const later = new Date(LEASE_UNTIL.getTime());
  const again = await claimDueDeliveries(pool, 'other', later, new Date(later.getTime() + 15_000), {
    limit: 10,
    perEndpoint: 10,
  });
  t.same(ids(again).sort(), ids(first).sort(), 'the crashed worker’s deliveries, once its lease ended');
});

t.test('the retry jitter stays within its share of each step, on both sides', async (t) => {
  await checkProperty(
    t,
    'jitter bounds',
    fc.property(
      fc.integer({ min: 1, max: RETRY_DELAYS_MS.length }),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      (attempts, r) => {
        const at = nextAttemptAt(attempts, NOW, () => r)!;
        const delay = at.getTime() - NOW.getTime();
        const step = RETRY_DELAYS_MS[attempts - 1]!;
        return Math.abs(delay - step) <= step * RETRY_JITTER + 1;
      },
    ),
    500,
  );
  t.equal(
    nextAttemptAt(RETRY_DELAYS_MS.length + 1, NOW, () => 0.3),
    null,
    'after the last step: failed',
  );
  const spread = new Set(Array.from({ length: 50 }, () => nextAttemptAt(1, NOW)!.getTime()));
  t.ok(spread.size > 1, 'with Math.random, deliveries that failed together do not come due together');
});

t.test('a resumed endpoint’s backlog comes due at a bounded rate, oldest first', async (t) => {
  const { pool } = await freshDatabase(t, undefined, 5);
  const tenant = randomUUID();
  const endpoint = await insertEndpoint(pool, tenant);
  await insertDeliveries(pool, endpoint, tenant, 600, { dueFrom: new Date(NOW.getTime() - 3_600_000) });
  await scheduleResumedBacklog(pool, endpoint, NOW, 50);
  const rows = await pool.query<{ next_attempt_at: Date; created_at: Date }>(
    `SELECT next_attempt_at, created_at FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY created_at`,
    [endpoint],
  );
  const due = rows.rows.map((r) => r.next_attempt_at.getTime());
  t.equal(due[0], NOW.getTime(), 'the oldest is due at once');
  t.ok(
    due.every((d, i) => i === 0 || d >= due[i - 1]!),
    'in the order they were created',
  );
  for (let second = 0; second < 12; second++) {
    const from = NOW.getTime() + second * 1000;
    const inWindow = due.filter((d) => d >= from && d < from + 1000).length;
    t.ok(inWindow <= 50, `second ${second}: ${inWindow} come due, at most 50`);
  }
  t.equal(due.at(-1), NOW.getTime() + (599 * 1000) / 50, 'the last after 12 s');
  // Claims follow the schedule: at the resume instant only the first is claimable.
  const first = await claimDueDeliveries(pool, 'w', NOW, LEASE_UNTIL, { limit: 100, perEndpoint: 100 });
  t.equal(first.length, 1);
  const oneSecond = new Date(NOW.getTime() + 1000);
  const next = await claimDueDeliveries(pool, 'w', oneSecond, LEASE_UNTIL, { limit: 100, perEndpoint: 100 });
  t.equal(next.length, 50, 'a second later, fifty more');
});

function ids(deliveries: ClaimedDelivery[]): string[] {
  return deliveries.map((d) => d.id);
}

function countBy<T>(items: readonly T[], key: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return counts;
}

t.test('only an endpoint proven fast gets the large cap; a slow, failing, hanging or new one the small', async (t) => {
  const { pool } = await freshDatabase(t, undefined, 5);
  const tenant = randomUUID();
  const limits = { limit: 100, perEndpoint: 4, perFastEndpoint: 20 };
  const at = (ms: number) => new Date(NOW.getTime() + ms);
  const claimAt = (ms: number, owner = 'w') => claimDueDeliveries(pool, owner, at(ms), at(ms + 15_000), limits);
  const record = (
    claimed: readonly Pick<ClaimedDelivery, 'id' | 'attempts' | 'lease_until'>[],
    finishedMs: number,
    options: { ok?: boolean; durationMs?: number } = {},
  ) =>
    recordAttempts(
      pool,
      'w',
      claimed.map((d) => ({
        deliveryId: d.id,
        attempt: d.attempts + 1,
        ok: options.ok ?? true,
        nextAttemptAt: (options.ok ?? true) ? null : at(finishedMs + 60_000),
        attemptedAt: at(finishedMs - (options.durationMs ?? 5)),
        finishedAt: at(finishedMs),
        requestHeaders: {},
        responseStatus: (options.ok ?? true) ? 200 : 503,
        responseHeaders: null,
        responseBody: null,
        durationMs: options.durationMs ?? 5,
        error: null,
        leaseUntil: d.lease_until,
      })),
    );
  const endpoint = await insertEndpoint(pool, tenant);
  await insertDeliveries(pool, endpoint, tenant, 300);
  const inFlight = async (ms: number) =>
    (await liveLeaseRows(pool, at(ms))).filter((row) => row.endpoint_id === endpoint);

  t.equal((await claimAt(0)).length, 4, 'a new endpoint has not shown its speed: the small cap');
  await record(await inFlight(0), 10);
  t.equal((await claimAt(20)).length, 20, 'after fast successes: the large cap');
  const twenty = await inFlight(20);
  await record(twenty.slice(0, 19), 30);
  await claimAt(2_000);
  t.equal((await inFlight(2_000)).length, 4, 'one delivery in flight for two seconds (it may hang): the small cap');
  await record(await inFlight(2_000), 2_010, { durationMs: 1_990 });
  t.equal((await claimAt(2_020)).length, 4, 'a slow success makes it slow: the small cap');
  await record(await inFlight(2_020), 2_030);
  t.equal((await claimAt(30_000)).length, 4, 'fast again, but a slow attempt in the last minute keeps it small');
  await record(await inFlight(30_000), 63_000);
  t.equal((await claimAt(63_010)).length, 20, 'a minute after the slow one, fast successes give the large cap back');
  const last = await inFlight(63_010);
  await record(last.slice(1), 63_020);
  await record(last.slice(0, 1), 63_020, { ok: false });
  t.equal((await claimAt(63_030)).length, 4, 'a failure since the last success: the small cap');
});

async function liveLeasesByTenant(pool: pg.Pool, at: Date): Promise<Map<string, number>> {
  return countBy(await liveLeaseRows(pool, at), (row) => row.tenant_id);
}

t.test('the tenant cap holds when workers claim at once, and a later claim fills exactly the room left', async (t) => {
  const { pool } = await freshDatabase(t, undefined, 12);
  const endpointPlan = fc.record({ due: fc.integer({ min: 0, max: 30 }), inFlight: fc.integer({ min: 0, max: 4 }) });
  const scenario = fc.record({
    tenants: fc.array(fc.array(endpointPlan, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 4 }),
    perEndpoint: fc.integer({ min: 1, max: 8 }),
    perTenant: fc.integer({ min: 1, max: 12 }),
    // Workers claiming at the same instant, each with its own free slots.
    claimers: fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 2, maxLength: 5 }),
  });
  await checkProperty(
    t,
    'tenant cap under concurrent claims',
    fc.asyncProperty(scenario, async ({ tenants, perEndpoint, perTenant, claimers }) => {
      await clearWebhookRows(pool);
      const limits = { perEndpoint, perTenant };
      // Per tenant: leases already in flight, and what the caps let be claimed on top of them.
      const expected = new Map<string, { before: number; claimable: number }>();
      for (const endpoints of tenants) {
        const tenantId = randomUUID();
        let before = 0;
        let open = 0;
        for (const plan of endpoints) {
          const id = await insertEndpoint(pool, tenantId);
          const inFlight = Math.min(plan.inFlight, perEndpoint);
          await insertDeliveries(pool, id, tenantId, plan.due);
          await insertDeliveries(pool, id, tenantId, inFlight, { leased: true });
          before += inFlight;
          open += Math.min(plan.due, perEndpoint - inFlight);
        }
        expected.set(tenantId, { before, claimable: Math.min(open, Math.max(0, perTenant - before)) });
      }
      const claims = await Promise.all(
        claimers.map((limit, i) => claimDueDeliveries(pool, `worker-${i}`, NOW, LEASE_UNTIL, { limit, ...limits })),
      );
      const claimed = claims.flat();
      if (new Set(ids(claimed)).size !== claimed.length) return false; // nothing claimed twice
      const byTenant = countBy(claimed, (d) => d.tenant_id);
      for (const [tenantId, { claimable }] of expected) if ((byTenant.get(tenantId) ?? 0) > claimable) return false;
      // A worker that found a tenant locked skipped it; a claim afterwards takes exactly what the caps still allow.
      await claimDueDeliveries(pool, 'sweeper', NOW, LEASE_UNTIL, { limit: 10_000, ...limits });
      const live = await liveLeasesByTenant(pool, NOW);
      for (const [tenantId, { before, claimable }] of expected)
        if ((live.get(tenantId) ?? 0) !== before + claimable) return false;
      const perEndpointLive = await liveLeases(pool);
      return [...perEndpointLive.values()].every((n) => n <= perEndpoint);
    }),
    30,
  );
});

t.test('a claim that fails at any statement leases nothing and leaves its tenant locks to no one', async (t) => {
  const { pool } = await freshDatabase(t, undefined, 5);
  const faults = faultInjector(t);
  const tenant = randomUUID();
  const endpoint = await insertEndpoint(pool, tenant);
  await insertDeliveries(pool, endpoint, tenant, 20);
  const limits = { limit: 10, perEndpoint: 8, perTenant: 5 };
  const count = faults.count();
  t.equal((await claimDueDeliveries(pool, 'probe', NOW, LEASE_UNTIL, limits)).length, 5, 'the tenant cap: 5');
  t.equal(count(), 5, "the tenants' locks, the endpoints' load, the queue rows' locks, the leases, COMMIT");
  const later = new Date(LEASE_UNTIL.getTime() + 1);
  const laterLease = new Date(later.getTime() + 15_000);
  for (const position of [1, 2, 3, 4, 5]) {
    faults.arm(position);
    await t.rejects(claimDueDeliveries(pool, `failing-${position}`, later, laterLease, limits), `fault at ${position}`);
    t.ok(faults.fired(), `the fault at statement ${position} fired`);
    t.same(await liveLeasesByTenant(pool, later), new Map(), 'nothing leased');
  }
  const after = await claimDueDeliveries(pool, 'next', later, laterLease, limits);
  t.equal(after.length, 5, 'the next claim takes the tenant: no lock was left behind');
});

t.test(
  'a tenant whose many endpoints hang holds at most its cap across two sets of workers, and another tenant’s deliveries flow',
  async (t) => {
    const CAP = 6;
    const HANGING_ENDPOINTS = 12;
    const HEALTHY_EVENTS = 40;
    const h = await webhookHarness(t, { definition: { limits: { webhook_endpoints: 30 } } });
    h.receiver.reply = (request) => (request.path.startsWith('/hang') ? 'hang' : { status: 200 });
    // Tenant A (the harness's workspace): twelve endpoints that never answer, and a backlog of 5 events each.
    for (let i = 0; i < HANGING_ENDPOINTS; i++)
      await h.createEndpoint({ url: h.receiver.url('127.0.0.1', `/hang-${i}`), events: ['document.uploaded'] });
    const tenantA = h.ws.workspace.id;
    for (let i = 0; i < 5; i++) await h.appendEvent('document.uploaded', resourcePayload());
    // Tenant B: another workspace, one endpoint that answers at once.
    const b = await seedWorkspace(h);
    const created = await h.request('/v1/webhooks', {
      method: 'POST',
      key: b.live,
      json: { url: h.receiver.url('127.0.0.1', '/healthy'), events: ['document.uploaded'] },
    });
    t.equal(created.status, 201);
    const appendForB = async () => {
      const stream = `webhook-test-resource-${randomUUID()}`;
      const context: CommandContext = {
        tenantId: b.workspace.id,
        sandbox: false,
        metadata: { actor: { type: 'system', name: 'fairness test' }, correlation_id: randomUUID() },
        now: h.services.now(),
      };
      await runCommand(h.services.store, context, [stream], (tx) =>
        tx.append(stream, 'any', [{ type: 'document.uploaded', data: { payload: resourcePayload() } }]),
      );
    };

    // Tenant A's in-flight deliveries, read from the database while the workers run.
    const samples: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const live = await liveLeasesByTenant(h.pool, new Date());
        samples.push(live.get(tenantA) ?? 0);
        await sleep(10);
      }
    })();
    // Should the test fail midway, the sampler stops before the database goes (its error is the test's anyway).
    t.teardown(() => {
      sampling = false;
      return sampler.catch(() => undefined);
    });
    // Two sets of workers, as two processes would run: 2 × 16 slots, which A's endpoints (12 × 3 with the
    // per-endpoint cap alone) could fill entirely.
    const options = {
      concurrency: 16,
      perEndpointConcurrency: 3,
      perTenantConcurrency: CAP,
      deliveryTimeoutMs: 8_000,
    };
    await h.startWorkers(options);
    await h.startWorkers(options);
    await waitFor(() => (samples.at(-1) ?? 0) >= CAP, 'tenant A reaches its cap');
    await Promise.all(Array.from({ length: HEALTHY_EVENTS }, appendForB));
    const count = async (sql: string, tenantId: string) =>
      (await h.pool.query<{ n: number }>(sql, [tenantId])).rows[0]!.n;
    await waitFor(
      async () =>
        (await count(
          "SELECT count(*)::int AS n FROM webhook_deliveries WHERE tenant_id = $1 AND status = 'succeeded'",
          b.workspace.id,
        )) === HEALTHY_EVENTS,
      'every delivery of tenant B succeeds',
    );
    const attemptsOfA = `SELECT count(*)::int AS n FROM webhook_delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
                          WHERE d.tenant_id = $1`;
    t.equal(
      await count(attemptsOfA, tenantA),
      0,
      'all of B’s deliveries were acknowledged before any attempt of A ended',
    );
    t.equal(
      h.receiver.requests.filter((r) => r.path.startsWith('/hang')).length,
      CAP,
      'the hanging receivers got exactly the cap of requests meanwhile',
    );
    t.equal(h.receiver.requests.filter((r) => r.path === '/healthy').length, HEALTHY_EVENTS);
    // A's first attempts time out; its slots go to the next deliveries of its backlog, still within the cap.
    await waitFor(
      async () => (await count(attemptsOfA, tenantA)) >= CAP && samples.at(-1) === CAP,
      'tenant A’s timed-out slots are taken by its next deliveries',
      30_000,
    );
    sampling = false;
    await sampler;
    t.ok(samples.length >= 10, `${samples.length} samples of A’s deliveries in flight`);
    t.equal(Math.max(...samples), CAP, 'tenant A never had more than its cap in flight');
    // The refilled slots are leases; their requests reach the receiver a moment later.
    await waitFor(
      () => h.receiver.requests.filter((r) => r.path.startsWith('/hang')).length > CAP,
      'A’s next deliveries reach its receivers',
      10_000,
    );
    t.pass('A’s backlog kept moving');
  },
);
