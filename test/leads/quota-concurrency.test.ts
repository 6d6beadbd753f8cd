import fc from 'fast-check';
import t from 'tap';
import type pg from 'pg';
import { quotaPeriod } from '../../src/workspaces/quota.js';
import { checkProperty } from '../support/properties.js';
import { applyDefinition } from '../../src/workspaces/repository.js';
import { demoDefinition, seedWorkspace, startApp, type SeededWorkspace, type TestApp } from '../support/app.js';
import { leadBody } from './helpers.js';

/**
 * A workspace's monthly quota holds exactly under concurrent captures. Before migration 50 the
 * check read the committed sum of 64 counter rows and the count went to one of them: captures arriving together all
 * passed (forty at once passed a quota of 3).
 */

const big = { capacity: 100_000, refill_per_second: 10_000 };
const withQuota = (monthlyLeads: number) => ({
  plan: 'starter' as const,
  limits: {
    monthly_leads: monthlyLeads,
    rate: { key: big, scopes: { 'leads:create': big, 'leads:read': big } },
  },
});

interface Answer {
  status: number;
  body: Record<string, unknown>;
  replayed: boolean;
}

async function post(app: TestApp, key: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await app.request('/v1/leads', { method: 'POST', key, json: body, headers });
  const text = await response.text();
  return {
    status: response.status,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
    replayed: response.headers.get('idempotent-replayed') === 'true',
  };
}

async function leadCount(pool: pg.Pool, tenantId: string, sandbox: boolean): Promise<number> {
  const result = await pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM leads WHERE tenant_id = $1 AND sandbox = $2',
    [tenantId, sandbox],
  );
  return result.rows[0]!.n;
}

async function counted(pool: pg.Pool, tenantId: string): Promise<number> {
  const result = await pool.query<{ used: number }>(
    'SELECT used::int AS used FROM quota_counters WHERE tenant_id = $1 AND period = $2',
    [tenantId, quotaPeriod(new Date())],
  );
  return result.rows[0]?.used ?? 0;
}

/** The person's fixed submission: every send of one person is one body (so a repeated key is a true repeat). */
function person(run: number, index: number): Record<string, unknown> {
  const digits = `${String(run % 10_000).padStart(4, '0')}${String(index).padStart(4, '0')}`;
  return {
    full_name: `Person ${index}`,
    phone: `98${digits}`,
    email: `p${digits}@example.com`,
    consent: true,
  };
}

const burst = fc.record({
  quota: fc.integer({ min: 0, max: 6 }),
  people: fc.integer({ min: 1, max: 10 }),
  sends: fc.array(
    fc.record({
      person: fc.nat(),
      test: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
      keyed: fc.boolean(),
      times: fc.integer({ min: 1, max: 3 }),
    }),
    { minLength: 1, maxLength: 14 },
  ),
});

t.test('new live leads never exceed the quota and reach it when enough people were sent', async (t) => {
  const app = await startApp(t);
  let run = 0;
  await checkProperty(
    t,
    'quota under concurrent captures',
    fc.asyncProperty(burst, async ({ quota, people, sends }) => {
      run += 1;
      const ws = await seedWorkspace(app, withQuota(quota));
      const requests = sends.flatMap((send, i) => {
        const index = send.person % people;
        const headers: Record<string, string> = send.keyed ? { 'idempotency-key': `burst-${run}-${i}` } : {};
        const key = send.test ? ws.test : ws.live;
        return Array.from({ length: send.times }, () => ({ live: !send.test, index, key, headers }));
      });
      const answers = await Promise.all(requests.map((r) => post(app, r.key, person(run, r.index), r.headers)));

      for (const answer of answers) {
        if (![200, 201, 429].includes(answer.status)) throw new Error(`unexpected answer ${JSON.stringify(answer)}`);
        if (answer.status === 429 && answer.body.error !== 'quota_exceeded')
          throw new Error(`429 without quota_exceeded: ${JSON.stringify(answer.body)}`);
      }
      const livePeople = new Set(requests.filter((r) => r.live).map((r) => r.index)).size;
      const testPeople = new Set(requests.filter((r) => !r.live).map((r) => r.index)).size;
      const live = await leadCount(app.pool, ws.workspace.id, false);
      const created = new Set(
        answers.filter((a, i) => a.status === 201 && requests[i]!.live && !a.replayed).map((a) => a.body.id),
      );
      const expected = Math.min(quota, livePeople);
      if (live !== expected || created.size !== live)
        throw new Error(`quota ${quota}, ${livePeople} live people: ${live} live leads, ${created.size} new 201s`);
      if ((await counted(app.pool, ws.workspace.id)) !== live) throw new Error('the counter differs from the leads');
      if ((await leadCount(app.pool, ws.workspace.id, true)) !== testPeople)
        throw new Error('test keys are not limited and not counted');
    }),
    15,
  );
});

const HELD_KEY = 'held-after-its-slot';

/**
 * Holds a capture's transaction open after it counted its lead: the test inserts, uncommitted, the Idempotency-Key
 * answer the capture is about to save, so the capture waits on that row (its count went first) until the test ends
 * its own transaction.
 */
async function holdCaptureAfterItsSlot(
  app: TestApp,
  ws: SeededWorkspace,
): Promise<{ holder: pg.PoolClient; held: Promise<Answer>; pid: number }> {
  const holder = await app.pool.connect();
  await holder.query('BEGIN');
  await holder.query(
    `INSERT INTO api_idempotency (tenant_id, sandbox, operation, key, request_hash, status, body, created_at, expires_at)
     VALUES ($1, false, 'createLead:secret', $2, 'held', 201, '{}', now(), now() + interval '1 day')`,
    [ws.workspace.id, HELD_KEY],
  );
  const held = post(app, ws.live, leadBody(), { 'idempotency-key': HELD_KEY });
  const pid = await waitingOn(app.pool, 'api_idempotency', 10_000);
  if (pid === null) throw new Error('the held capture never reached its answer’s row');
  return { holder, held, pid };
}

/** The server process whose current statement names `table` and waits for a lock, polled up to `ms`. */
async function waitingOn(pool: pg.Pool, table: string, ms: number): Promise<number | null> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const result = await pool.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position($1 IN query) > 0`,
      [table],
    );
    if (result.rows[0]) return result.rows[0].pid;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return null;
}

/** Whether a second capture waits behind the held one's slot (rather than answering while it is held). */
async function waitsBehind(app: TestApp, second: Promise<Answer>): Promise<boolean> {
  const outcome = await Promise.race([
    second.then(() => 'answered' as const),
    waitingOn(app.pool, 'quota_counters', 10_000).then((pid) => (pid === null ? 'neither' : 'waiting')),
  ]);
  return outcome === 'waiting';
}

t.test('a capture holding the last slot: the next waits, and is refused when it commits', async (t) => {
  const app = await startApp(t);
  const ws = await seedWorkspace(app, withQuota(1));
  const { holder, held } = await holdCaptureAfterItsSlot(app, ws);
  const second = post(app, ws.live, leadBody());
  t.ok(await waitsBehind(app, second), 'the second capture waits for the held one’s slot');

  await holder.query('ROLLBACK');
  holder.release();
  const [first, next] = await Promise.all([held, second]);
  t.equal(first.status, 201, 'the held capture committed its lead');
  t.same([next.status, next.body.error], [429, 'quota_exceeded'], 'the second is refused: the slot was taken');
  t.equal(await leadCount(app.pool, ws.workspace.id, false), 1);
  t.equal(await counted(app.pool, ws.workspace.id), 1);
});

t.test('a capture holding the last slot: its rollback gives the slot to the one waiting', async (t) => {
  const app = await startApp(t);
  const ws = await seedWorkspace(app, withQuota(1));
  const { holder, held, pid } = await holdCaptureAfterItsSlot(app, ws);
  const second = post(app, ws.live, leadBody());
  t.ok(await waitsBehind(app, second), 'the second capture waits for the held one’s slot');

  // The held capture's statement is cancelled: its transaction rolls back, its count with it.
  await app.pool.query('SELECT pg_cancel_backend($1)', [pid]);
  const [first, next] = await Promise.all([held, second]);
  await holder.query('ROLLBACK');
  holder.release();
  t.equal(first.status, 500, 'the cancelled capture failed');
  t.equal(next.status, 201, 'the second took the slot the rollback gave back');
  t.equal(await leadCount(app.pool, ws.workspace.id, false), 1);
  t.equal(await counted(app.pool, ws.workspace.id), 1, 'the rolled-back count is gone');
  const third = await post(app, ws.live, leadBody());
  t.same([third.status, third.body.error], [429, 'quota_exceeded'], 'and the quota is used up');
});

t.test(
  'an unlimited workspace counts nothing; given a limit mid-month it counts the leads the log holds',
  async (t) => {
    const app = await startApp(t);
    const rate = { key: big, scopes: { 'leads:create': big, 'leads:read': big } };
    const ws = await seedWorkspace(app, { plan: 'enterprise', limits: { rate } });
    for (let i = 0; i < 3; i += 1) t.equal((await post(app, ws.live, person(9001, i))).status, 201);
    t.equal((await post(app, ws.test, person(9001, 9))).status, 201, 'a sandbox lead, never counted');
    t.equal((await post(app, ws.live, person(9001, 0))).status, 200, 'a duplicate, never counted');
    t.equal(await counted(app.pool, ws.workspace.id), 0, 'no counter while there is no limit');

    // `workspace apply` of the same workspace with a limit of 4 new leads a month.
    const limited = demoDefinition({ slug: ws.workspace.slug, plan: 'enterprise', limits: { monthly_leads: 4, rate } });
    await applyDefinition(app.pool, limited, app.services.secretBox);
    t.equal(await counted(app.pool, ws.workspace.id), 3, "the month's live leads, counted from the log");
    t.equal((await post(app, ws.live, person(9001, 3))).status, 201, 'the fourth fits');
    const fifth = await post(app, ws.live, person(9001, 4));
    t.same([fifth.status, fifth.body.error], [429, 'quota_exceeded'], 'the fifth is refused');
    t.equal(await leadCount(app.pool, ws.workspace.id, false), 4);
  },
);
