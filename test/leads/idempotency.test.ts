import t from 'tap';
import { pino } from 'pino';
import { startWorkers } from '../../src/subscribers/index.js';
import { TestClock } from '../support/app.js';
import { leadBody, leadsFixture } from './helpers.js';

t.test('a repeated Idempotency-Key answers the first answer', async (t) => {
  const clock = new TestClock();
  const f = await leadsFixture(t, { now: clock.now });
  const body = leadBody();
  const headers = { 'idempotency-key': 'order-123:attempt.1_a-b' };
  const first = await f.post(body, { headers });
  t.equal(first.status, 201);
  t.notOk(first.headers.get('idempotent-replayed'));

  const again = await f.post({ ...body, email: body.email }, { headers });
  t.equal(again.status, 201, 'the first status, not 200 duplicate');
  t.same(again.body, first.body, 'the first body');
  t.equal(again.headers.get('idempotent-replayed'), 'true');

  const reordered = Object.fromEntries(Object.entries(body).reverse());
  t.same((await f.post(reordered, { headers })).body, first.body, 'key order does not make a different request');

  const different = await f.post({ ...body, city: 'Delhi' }, { headers });
  t.equal(different.status, 409);
  t.equal(different.body.error, 'idempotency_key_reused');

  const count = await f.pool.query('SELECT count(*)::int AS n FROM events');
  t.equal(count.rows[0].n, 1, 'the repeats ran nothing');

  const sandbox = await f.post(body, { key: f.test, headers });
  t.equal(sandbox.status, 201, 'keys are per mode: the test key starts fresh');
  t.equal(sandbox.body.test_mode, true);

  clock.advance(24 * 60 * 60 * 1000 + 1);
  const later = await f.post(body, { headers });
  t.equal(later.status, 200, 'after 24 hours the key is new again; the person is now a duplicate');
  t.same(later.body, { id: first.body.id, duplicate: true });

  const invalid = await f.post(leadBody(), { headers: { 'idempotency-key': 'has space' } });
  t.equal(invalid.status, 400);
  t.equal(invalid.body.error, 'validation_failed');
  const tooLong = await f.post(leadBody(), { headers: { 'idempotency-key': 'a'.repeat(256) } });
  t.equal(tooLong.status, 400);

  const failed = await f.post({ ...leadBody(), consent: false }, { headers: { 'idempotency-key': 'fix-and-retry' } });
  t.equal(failed.body.error, 'consent_required');
  t.equal(
    (await f.post(leadBody(), { headers: { 'idempotency-key': 'fix-and-retry' } })).status,
    201,
    'a refused request is not remembered',
  );
});

t.test('keys are per workspace', async (t) => {
  const f = await leadsFixture(t);
  const { seedWorkspace } = await import('../support/app.js');
  const other = await seedWorkspace(f);
  const headers = { 'idempotency-key': 'shared-key' };
  const a = await f.post(leadBody(), { headers });
  const b = await f.post(leadBody(), { key: other.live, headers });
  t.equal(a.status, 201);
  t.equal(b.status, 201);
  t.not(a.body.id, b.body.id);
});

t.test('simultaneous repeats run the command once', async (t) => {
  const f = await leadsFixture(t);
  const body = leadBody();
  const headers = { 'idempotency-key': 'concurrent-1' };
  const results = await Promise.all(Array.from({ length: 30 }, () => f.post(body, { headers })));
  t.ok(
    results.every((r) => r.status === 201),
    'every repeat answers 201',
  );
  t.equal(new Set(results.map((r) => JSON.stringify(r.body))).size, 1, 'with the same body');
  t.equal(
    results.filter((r) => r.headers.get('idempotent-replayed') !== 'true').length,
    1,
    'one ran, the others replayed',
  );
  const events = await f.pool.query('SELECT type, count(*)::int AS n FROM events GROUP BY type');
  t.same(events.rows, [{ type: 'lead.created', n: 1 }], 'one event: no enquiries from the repeats');

  const different = await Promise.all([
    f.post(body, { headers: { 'idempotency-key': 'concurrent-2' } }),
    f.post({ ...body, city: 'X' }, { headers: { 'idempotency-key': 'concurrent-2' } }),
  ]);
  t.same(
    different.map((r) => r.status).sort(),
    [200, 409],
    'same key, different bodies at once: one runs, the other is refused',
  );
});

t.test("the workers' hourly purge drops every operation's answers past their day and keeps the rest", async (t) => {
  const clock = new TestClock();
  const f = await leadsFixture(t, { now: clock.now });
  const first = await f.post(leadBody(), { headers: { 'idempotency-key': 'kept-a-day' } });
  t.equal(first.status, 201);
  // Another operation's answer in the same store (a ping's), stored a day earlier.
  await f.pool.query(
    `INSERT INTO api_idempotency (tenant_id, sandbox, operation, key, request_hash, status, body, created_at, expires_at)
     VALUES ($1, false, 'sendWebhookEndpointTest', 'old-ping', 'h', 202, '{}', $2, $2::timestamptz + interval '1 day')`,
    [f.workspace.id, new Date(clock.now().getTime() - 2 * 86_400_000)],
  );
  const stored = async () =>
    (await f.pool.query<{ operation: string; key: string }>('SELECT operation, key FROM api_idempotency ORDER BY key'))
      .rows;
  t.same(await stored(), [
    { operation: 'createLead:secret', key: 'kept-a-day' },
    { operation: 'sendWebhookEndpointTest', key: 'old-ping' },
  ]);

  const workers = await startWorkers(f.services, pino({ level: 'silent' }), { purgeIntervalMs: 50 });
  t.teardown(() => workers.stop());
  const deadline = Date.now() + 30_000;
  while ((await stored()).length > 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.same(await stored(), [{ operation: 'createLead:secret', key: 'kept-a-day' }], 'the expired ping answer is gone');

  clock.advance(24 * 60 * 60 * 1000 + 1);
  while ((await stored()).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.same(await stored(), [], "a day later the capture's answer is gone too");
});
