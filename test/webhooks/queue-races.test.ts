import { randomUUID } from 'node:crypto';
import pg from 'pg';
import t, { type Test } from 'tap';
import { migrate } from '../../src/storage/migrate.js';
import { migrations } from '../../src/storage/migrations/index.js';
import type { Queryable } from '../../src/storage/postgres.js';
import { claimDueDeliveries, claimIn, type ClaimedDelivery } from '../../src/webhooks/claims.js';
import { recordAttempts, recordingStatement, type AttemptRecord } from '../../src/webhooks/deliveries.js';
import { emptyDatabase, freshDatabase } from '../support/db.js';
import { insertEndpointRow, liveLeaseRows } from './support/endpoint-rows.js';
import { resourcePayload, webhookHarness } from './support/harness.js';
import { waitFor } from './support/receiver.js';

// Two workers at once on one endpoint's queue, with one held inside its claim's transaction at each point (before
// each of its statements and before COMMIT) while the other claims, records, or a delivery is queued; a lapsed lease
// whose attempt is being recorded (held before COMMIT) while a claim runs, and one a claim dropped first; a delivery
// row written twice on the happy path; a backlog queued before the queue rows existed, delivered after the upgrade.

const NOW = new Date('2026-11-20T10:00:00.000Z');
const LEASE_UNTIL = new Date(NOW.getTime() + 15_000);
/** BEGIN, then the claim's four statements, then COMMIT: a claim can be held before statement 1, 2, 3, 4 or COMMIT. */
const POINTS = [0, 1, 2, 3, 4];

async function queueDeliveries(sql: Queryable, endpointId: string, tenantId: string, count: number): Promise<string[]> {
  const rows = await sql.query<{ id: string }>(
    `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status, next_attempt_at, created_at, updated_at)
     SELECT gen_random_uuid(), gen_random_uuid(), $1, $2, false, 'document.uploaded', '{}', 'pending',
            $3::timestamptz - make_interval(secs => (100 - g) / 1000.0), $3, $3
       FROM generate_series(1, $4) g RETURNING id`,
    [endpointId, tenantId, NOW, count],
  );
  return rows.rows.map((row) => row.id);
}

/** A claim that stops before its statement number `point` (counted from 0; 4 is COMMIT) until released. */
async function heldClaim(pool: pg.Pool, owner: string, point: number, limits = { limit: 50, perEndpoint: 4 }) {
  const client = await pool.connect();
  let sent = 0;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let reach!: () => void;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  const gate = async () => {
    if (sent !== point) return;
    reach();
    await released;
  };
  const sql: Queryable = {
    query: async <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => {
      await gate();
      const result = await client.query<R>(text, values);
      sent++;
      return result;
    },
  };
  const done = (async (): Promise<ClaimedDelivery[]> => {
    await client.query('BEGIN');
    try {
      const claimed = await claimIn(sql, { owner, now: NOW, leaseUntil: LEASE_UNTIL, limits });
      await gate();
      await client.query('COMMIT');
      return claimed;
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    } finally {
      reach(); // a claim that found nothing ends before the point
      client.release();
    }
  })();
  return { reached, release, done };
}

/** Runs `other` while `held` waits at its point; `other` may wait for the held claim's locks, so it gets 300 ms. */
async function whileHeld<T>(held: Awaited<ReturnType<typeof heldClaim>>, other: () => Promise<T>) {
  await held.reached;
  const running = other();
  const early = await Promise.race([running.then(() => true), new Promise((r) => setTimeout(() => r(false), 300))]);
  held.release();
  const [claimed, result] = await Promise.all([held.done, running]);
  return { claimed, result, finishedWhileHeld: early };
}

async function setUp(t: Test) {
  const { pool } = await freshDatabase(t, undefined, 6);
  return pool;
}

async function oneEndpoint(pool: pg.Pool) {
  const tenantId = randomUUID();
  const endpointId = await insertEndpointRow(pool, tenantId, NOW);
  return { tenantId, endpointId };
}

t.test(
  'two workers claiming one endpoint, one held at each point of its claim: no delivery twice, no lease lost',
  async (t) => {
    const pool = await setUp(t);
    for (const point of POINTS) {
      const { tenantId, endpointId } = await oneEndpoint(pool);
      await queueDeliveries(pool, endpointId, tenantId, 10);
      const held = await heldClaim(pool, 'held', point);
      const { claimed, result, finishedWhileHeld } = await whileHeld(held, () =>
        claimDueDeliveries(pool, 'other', NOW, LEASE_UNTIL, { limit: 50, perEndpoint: 4 }),
      );
      const all = [...claimed, ...result].map((d) => d.id);
      t.equal(new Set(all).size, all.length, `held before statement ${point}: no delivery claimed twice`);
      t.equal(all.length, 4, `held before statement ${point}: the cap of 4 taken between them`);
      const leases = (await liveLeaseRows(pool, NOW)).filter((row) => row.endpoint_id === endpointId);
      t.same(
        leases.map((row) => `${row.id}:${row.owner}`).sort(),
        [...claimed.map((d) => `${d.id}:held`), ...result.map((d) => `${d.id}:other`)].sort(),
        `held before statement ${point}: each lease is on the queue row, under its claimer (other ${finishedWhileHeld ? 'went on' : 'waited'})`,
      );
    }
  },
);

t.test('a delivery queued while a claim is held at each point is claimed then or by the next claim', async (t) => {
  const pool = await setUp(t);
  for (const point of POINTS) {
    const { tenantId, endpointId } = await oneEndpoint(pool);
    await queueDeliveries(pool, endpointId, tenantId, 2);
    const held = await heldClaim(pool, 'held', point, { limit: 50, perEndpoint: 10 });
    const { claimed, result: queued } = await whileHeld(held, () => queueDeliveries(pool, endpointId, tenantId, 3));
    const next = await claimDueDeliveries(pool, 'next', NOW, LEASE_UNTIL, { limit: 50, perEndpoint: 10 });
    const all = [...claimed, ...next].map((d) => d.id);
    t.equal(new Set(all).size, 5, `held before statement ${point}: all five claimed once, none hidden`);
    t.ok(
      queued.every((id) => all.includes(id)),
      `held before statement ${point}: the three queued meanwhile among them`,
    );
  }
});

for (const rated of [false, true])
  t.test(
    `attempts recorded while a claim of the same endpoint${rated ? ' (with a rate)' : ''} is held at each point`,
    async (t) => {
      const pool = await setUp(t);
      for (const point of POINTS) {
        const { tenantId, endpointId } = await oneEndpoint(pool);
        if (rated)
          await pool.query('UPDATE webhook_endpoints SET rate_limit_per_second = 100 WHERE id = $1', [endpointId]);
        await queueDeliveries(pool, endpointId, tenantId, 6);
        const first = await claimDueDeliveries(pool, 'first', NOW, LEASE_UNTIL, { limit: 2, perEndpoint: 8 });
        const held = await heldClaim(pool, 'held', point, { limit: 50, perEndpoint: 8 });
        const {
          claimed,
          result: recorded,
          finishedWhileHeld,
        } = await whileHeld(held, () =>
          recordAttempts(
            pool,
            'first',
            first.map((d) => succeeded(d)),
          ),
        );
        t.equal(recorded.size, 2, `held before statement ${point}: both attempts recorded`);
        if (rated) {
          // The recording writes the rate's log on the queue row the claim locks (from its third statement): it
          // waits for the claim there, never the other way round, so neither deadlocks.
          const log = await pool.query<{ ends: number }>(
            `SELECT (SELECT sum(l.value::int) FROM jsonb_each_text(rate_log) l)::int AS ends FROM webhook_queues
              WHERE endpoint_id = $1`,
            [endpointId],
          );
          t.equal(log.rows[0]?.ends, 2, `held before statement ${point}: both ends in the rate's log`);
        } else {
          // The leases are rows of their own (migration 340): an endpoint without a rate has its attempts recorded
          // without waiting for its claims, which once took turns with them on its queue row.
          t.ok(finishedWhileHeld, `held before statement ${point}: the recording did not wait for the claim`);
        }
        t.equal(claimed.length, 4, `held before statement ${point}: the claim took the other four`);
        t.notOk(
          claimed.some((d) => first.some((f) => f.id === d.id)),
          `held before statement ${point}: nothing in flight claimed again`,
        );
        const leases = (await liveLeaseRows(pool, NOW)).filter((row) => row.endpoint_id === endpointId);
        t.same(
          leases.map((row) => row.id).sort(),
          claimed.map((d) => d.id).sort(),
          `held before statement ${point}: the recorded leases are gone, the claim's kept`,
        );
      }
    },
  );

t.test(
  'a lapsed lease whose attempt is being recorded: a claim then neither waits for it nor sends it again',
  async (t) => {
    const pool = await setUp(t);
    const { tenantId, endpointId } = await oneEndpoint(pool);
    const ids = await queueDeliveries(pool, endpointId, tenantId, 3);
    const [slow] = await claimDueDeliveries(pool, 'slow', NOW, LEASE_UNTIL, { limit: 1, perEndpoint: 4 });
    // Its worker records the attempt after the lease ran out, and is held before COMMIT: its lease row is locked.
    const recorder = await pool.connect();
    t.teardown(() => recorder.release());
    await recorder.query('BEGIN');
    const { text, values } = recordingStatement('slow', [succeeded(slow!)]);
    await recorder.query(text, values);
    const later = new Date(LEASE_UNTIL.getTime() + 1_000);
    const leaseLater = new Date(later.getTime() + 15_000);
    const claiming = claimDueDeliveries(pool, 'other', later, leaseLater, { limit: 10, perEndpoint: 4 });
    const early = await Promise.race([
      claiming.then(() => true),
      new Promise((r) => setTimeout(() => r(false), 2_000)),
    ]);
    await recorder.query('COMMIT');
    const claimed = await claiming;
    t.ok(early, 'the claim did not wait for the recording');
    t.same(
      claimed.map((d) => d.id).sort(),
      ids.filter((id) => id !== slow!.id).sort(),
      'it took the two others and left the one being recorded',
    );
    const after = await claimDueDeliveries(pool, 'third', later, leaseLater, { limit: 10, perEndpoint: 4 });
    t.same(after, [], 'once recorded, it is not claimed again');
    const row = await pool.query<{ status: string; attempts: number }>(
      'SELECT status, attempts FROM webhook_deliveries WHERE id = $1',
      [slow!.id],
    );
    t.same(row.rows, [{ status: 'succeeded', attempts: 1 }], 'recorded under its lapsed lease, once');
  },
);

t.test('a lapsed lease dropped by a claim first: the late attempt is not recorded, the new claim’s is', async (t) => {
  const pool = await setUp(t);
  const { tenantId, endpointId } = await oneEndpoint(pool);
  await queueDeliveries(pool, endpointId, tenantId, 1);
  const [slow] = await claimDueDeliveries(pool, 'slow', NOW, LEASE_UNTIL, { limit: 1, perEndpoint: 4 });
  const later = new Date(LEASE_UNTIL.getTime() + 1_000);
  const [again] = await claimDueDeliveries(pool, 'other', later, new Date(later.getTime() + 15_000), {
    limit: 1,
    perEndpoint: 4,
  });
  t.equal(again?.id, slow!.id, 'claimed again once its lease ran out');
  const late = await recordAttempts(pool, 'slow', [succeeded(slow!)]);
  t.equal(late.size, 0, 'the attempt under the lapsed lease is not recorded');
  const recorded = await recordAttempts(pool, 'other', [succeeded(again!)]);
  t.equal(recorded.size, 1, 'the attempt under the new lease is');
  t.same(await liveLeaseRows(pool, NOW), [], 'no lease left');
});

function succeeded(delivery: Pick<ClaimedDelivery, 'id' | 'lease_until'>): AttemptRecord {
  return {
    deliveryId: delivery.id,
    leaseUntil: delivery.lease_until,
    attempt: 1,
    ok: true,
    nextAttemptAt: null,
    attemptedAt: NOW,
    finishedAt: NOW,
    requestHeaders: {},
    responseStatus: 200,
    responseHeaders: null,
    responseBody: null,
    durationMs: 3,
    error: null,
  };
}

t.test('on the happy path a delivery row is written twice: fanned out, then its outcome', async (t) => {
  const h = await webhookHarness(t);
  // Every write to a delivery row, as PostgreSQL performs it.
  await h.pool.query(`CREATE TABLE delivery_writes (id uuid, op text)`);
  await h.pool.query(`CREATE FUNCTION note_delivery_write() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN INSERT INTO delivery_writes VALUES (NEW.id, TG_OP); RETURN NULL; END $$`);
  await h.pool.query(`CREATE TRIGGER note_delivery_write AFTER INSERT OR UPDATE ON webhook_deliveries
    FOR EACH ROW EXECUTE FUNCTION note_delivery_write()`);
  h.receiver.reply = () => ({ status: 200 });
  await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] });
  for (let i = 0; i < 30; i++) await h.appendEvent('document.uploaded', resourcePayload(`file-${i}.pdf`));
  await h.startWorkers();
  await waitFor(async () => {
    const done = await h.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'succeeded'",
    );
    return done.rows[0]!.n === 30;
  }, 'all thirty delivered');
  const writes = await h.pool.query<{ id: string; ops: string }>(
    `SELECT id, string_agg(op, ',' ORDER BY op) AS ops FROM delivery_writes GROUP BY id`,
  );
  t.equal(writes.rows.length, 30);
  t.ok(
    writes.rows.every((row) => row.ops === 'INSERT,UPDATE'),
    'each row: one INSERT (the fan-out), one UPDATE (the outcome); the claim writes the endpoint’s queue row only',
  );
});

t.test('a claim leaves the delivery rows as they are (same xmin)', async (t) => {
  const pool = await setUp(t);
  const { tenantId, endpointId } = await oneEndpoint(pool);
  await queueDeliveries(pool, endpointId, tenantId, 5);
  const before = await pool.query<{ id: string; xmin: string }>(
    'SELECT id, xmin::text FROM webhook_deliveries ORDER BY id',
  );
  const claimed = await claimDueDeliveries(pool, 'w', NOW, LEASE_UNTIL, { limit: 5, perEndpoint: 5 });
  t.equal(claimed.length, 5);
  const after = await pool.query<{ id: string; xmin: string }>(
    'SELECT id, xmin::text FROM webhook_deliveries ORDER BY id',
  );
  t.same(after.rows, before.rows, 'no delivery row was written by the claim');
});

t.test('a backlog queued before the upgrade, leases included, is delivered after it', async (t) => {
  const { pool } = await emptyDatabase(t);
  await migrate(
    pool,
    migrations.filter((m) => m.version < 200),
  );
  // Before the upgrade: two endpoints with backlogs, a few of them leased by a worker still running, and a paused one.
  const tenantId = randomUUID();
  const endpoints = [await insertEndpointRow(pool, tenantId, NOW), await insertEndpointRow(pool, tenantId, NOW)];
  const now = new Date();
  for (const [i, endpointId] of endpoints.entries())
    await pool.query(
      `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status, attempts,
                                       next_attempt_at, lease_owner, lease_until, created_at, updated_at)
       SELECT gen_random_uuid(), gen_random_uuid(), $1, $2, false, 'document.uploaded', '{}', 'pending', 0,
              $3::timestamptz - make_interval(secs => (1000 - g) / 1000.0),
              CASE WHEN g <= $4 THEN 'old-worker' END, CASE WHEN g <= $4 THEN $3::timestamptz + interval '1 minute' END,
              $3::timestamptz - make_interval(secs => (1000 - g) / 1000.0), $3
         FROM generate_series(1, 300) g`,
      [endpointId, tenantId, now, i === 0 ? 3 : 0],
    );
  await pool.query(
    `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status, attempts, created_at, updated_at)
     SELECT gen_random_uuid(), gen_random_uuid(), $1, $2, false, 'document.uploaded', '{}', 'succeeded', 1, $3, $3
       FROM generate_series(1, 50)`,
    [endpoints[1], tenantId, now],
  );
  const applied = await migrate(pool);
  t.ok(applied.includes(200) && applied.every((version) => version >= 200), 'the upgrade (200 and any after it)');
  const leased = await liveLeaseRows(pool, now);
  t.equal(leased.length, 3, 'the old worker’s live leases kept (as lease rows since migration 340)');
  t.ok(leased.every((row) => row.owner === 'old-worker' && row.endpoint_id === endpoints[0]));
  // Workers after the upgrade: claims and outcomes until nothing is pending.
  const sent: ClaimedDelivery[] = [];
  let at = now;
  for (let round = 0; round < 200; round++) {
    const claimed = await claimDueDeliveries(pool, 'new-worker', at, new Date(at.getTime() + 15_000), {
      limit: 64,
      perEndpoint: 16,
    });
    sent.push(...claimed);
    await recordAttempts(
      pool,
      'new-worker',
      claimed.map((d) => succeeded(d)),
    );
    const pending = await pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'pending'",
    );
    if (pending.rows[0]!.n === 0) break;
    at = new Date(at.getTime() + (claimed.length === 0 ? 30_000 : 10));
  }
  const states = await pool.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status ORDER BY status',
  );
  t.same(states.rows, [{ status: 'succeeded', n: 650 }], 'the whole backlog delivered after the upgrade');
  t.equal(
    new Set(sent.map((d) => d.id)).size,
    600,
    'each pending delivery sent once (the old leases after they ran out)',
  );
  for (const endpointId of endpoints) {
    const order = sent.filter((d) => d.endpoint_id === endpointId).map((d) => d.id);
    const byDue = await pool.query<{ id: string }>(
      'SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 AND attempts = 1 AND id = ANY ($2::uuid[]) ORDER BY created_at, id',
      [endpointId, order],
    );
    const leasedFirst = endpointId === endpoints[0] ? 3 : 0;
    t.same(
      order.slice(0, order.length - leasedFirst),
      byDue.rows.map((row) => row.id).filter((id) => !leased.some((l) => l.id === id)),
      'each endpoint’s backlog in its order (the leased ones once their lease ended)',
    );
  }
});
