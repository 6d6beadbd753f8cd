import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import pg from 'pg';
import t, { type Test } from 'tap';
import { buildApp } from '../../src/http/app.js';
import { createServices } from '../../src/bootstrap.js';
import { loadConfig } from '../../src/config.js';
import { generateKey, hashKey } from '../../src/keys/api-key.js';
import { KeyLookupCache, LISTENER_NAME } from '../../src/keys/key-cache.js';
import { keyCacheId, revokeKey } from '../../src/keys/repository.js';
import { MemoryRateLimitStore } from '../../src/ratelimit/memory-store.js';
import { RedisRateLimitStore } from '../../src/ratelimit/redis-store.js';
import { seedWorkspace, startApp, type TestApp } from '../support/app.js';
import { runCliJson } from '../support/cli.js';
import { checkProperty } from '../support/properties.js';
import { REDIS_URL, redisSkipReason } from '../support/redis.js';
import { recordSql, type SentStatement } from '../support/sql-recorder.js';

const KEY_LOOKUP = /FROM api_keys k JOIN workspaces w/;
const lookups = (sent: SentStatement[]) => sent.filter((q) => KEY_LOOKUP.test(q.text)).length;
const randomKey = () => generateKey('secret', 'live');
const from = (ip: string, key: string) => ({ key, headers: { 'x-forwarded-for': ip } });

/** The app behind one proxy (so X-Forwarded-For names the client), its buckets on a clock that does not move. */
async function throttledApp(t: Test): Promise<TestApp> {
  const api = await startApp(t, { config: { trustProxy: 1 } });
  await api.services.rateLimits.close();
  const frozen = Date.now();
  api.services.rateLimits = new MemoryRateLimitStore(() => frozen);
  return api;
}

async function statusCounts(responses: Response[]): Promise<Record<number, number>> {
  const counts: Record<number, number> = {};
  for (const r of responses) {
    counts[r.status] = (counts[r.status] ?? 0) + 1;
    await r.arrayBuffer();
  }
  return counts;
}

t.test('2,000 random well-formed keys from one address cost no lookup', async (t) => {
  const api = await throttledApp(t);
  const { capacity } = api.services.config.authFailureLimit;
  t.equal(capacity, 30, 'the default burst is 30 failures');
  const sent = recordSql(t);
  const responses: Response[] = [];
  for (let i = 0; i < 2000; i++) responses.push(await api.request('/v1/leads', from('203.0.113.9', randomKey())));
  t.same(await statusCounts(responses), { 401: capacity, 429: 2000 - capacity }, 'the burst answers 401, then 429');
  t.equal(lookups(sent), 0, 'no value that names no key reaches the database');

  // One wrong key repeated from another address: counted every time, never looked up.
  const wrong = randomKey();
  const before = lookups(sent);
  const repeated: Response[] = [];
  for (let i = 0; i < 50; i++) repeated.push(await api.request('/v1/leads', from('198.51.100.20', wrong)));
  t.same(await statusCounts(repeated), { 401: capacity, 429: 50 - capacity }, 'failures count even when cached');
  t.equal(lookups(sent) - before, 0, 'a repeated unknown key is not looked up');

  // Malformed keys cost no lookup and are not counted.
  const malformed = await api.request('/v1/leads', from('192.0.2.44', 'key_live_short'));
  t.equal(malformed.status, 401);
});

t.test('the 429 of failed authentications has the Error body, scope, retry_after and Retry-After', async (t) => {
  const api = await throttledApp(t);
  const ws = await seedWorkspace(api);
  for (let i = 0; i < 30; i++) await (await api.request('/v1/leads', from('203.0.113.10', randomKey()))).arrayBuffer();
  const refused = await api.request('/v1/leads', from('203.0.113.10', randomKey()));
  t.equal(refused.status, 429);
  const body = (await refused.json()) as Record<string, unknown>;
  t.same(Object.keys(body).sort(), ['error', 'message', 'request_id', 'retry_after', 'scope']);
  t.match(body, {
    error: 'rate_limited',
    message: String,
    scope: 'failed_authentication',
    retry_after: 2,
    request_id: refused.headers.get('request-id'),
  });
  t.equal(refused.headers.get('retry-after'), '2', 'Retry-After equals retry_after (one failure back per 2 s)');
  t.equal(refused.headers.get('ratelimit-limit'), null, 'no key bucket was taken, so no RateLimit-* headers');
  t.equal(refused.headers.get('content-type'), 'application/json; charset=utf-8');

  // A valid key is served from the throttled address, even one the process has never looked up.
  const fresh = await ws.key({});
  t.equal((await api.request('/v1/leads', from('203.0.113.10', fresh.value))).status, 200, 'a key never seen before');
  t.equal((await api.request('/v1/leads', from('203.0.113.10', fresh.value))).status, 200, 'and again');
  // A revoked key is a failure like an unknown one: 429 from the throttled address, 401 from another.
  const revoked = await ws.key({});
  await revokeKey(api.pool, ws.workspace.id, revoked.id);
  t.equal((await api.request('/v1/leads', from('203.0.113.10', revoked.value))).status, 429, 'a revoked key: 429');
  t.equal((await api.request('/v1/leads', from('198.51.100.7', revoked.value))).status, 401, 'elsewhere 401');
  // Every other workspace key and address is untouched.
  for (const key of [ws.live, ws.test])
    t.equal((await api.request('/v1/leads', from('198.51.100.8', key))).status, 200);
});

t.test('failures count per IPv4 address and per IPv6 /64', async (t) => {
  const api = await throttledApp(t);
  const ws = await seedWorkspace(api);
  for (let i = 0; i < 30; i++)
    await (await api.request('/v1/leads', from(`2001:db8:1:2::${i.toString(16)}`, randomKey()))).arrayBuffer();
  t.equal(
    (await api.request('/v1/leads', from('2001:db8:1:2:aaaa:bbbb:cccc:dddd', randomKey()))).status,
    429,
    'another address of the same /64 is refused',
  );
  t.equal((await api.request('/v1/leads', from('2001:db8:1:3::1', randomKey()))).status, 401, 'the next /64 is not');
  t.equal((await api.request('/v1/leads', from('2001:db8:1:3::1', ws.live))).status, 200);
  t.equal((await api.request('/v1/leads', from('::ffff:198.51.100.99', randomKey()))).status, 401);
});

t.test('a new key works at once, created here or by another process; no other value is looked up', async (t) => {
  const api = await startApp(t);
  const url = (api.pool as unknown as { options: { connectionString: string } }).options.connectionString;
  await api.services.keys.listen(url);
  const ws = await seedWorkspace(api);

  const here = await ws.key({});
  t.equal((await api.request('/v1/leads', { key: here.value })).status, 200, 'a key created in this process');
  const created = (await runCliJson(url, [
    'key',
    'create',
    ws.workspace.slug,
    '--type',
    'secret',
    '--mode',
    'live',
    '--scopes',
    'leads:read',
  ])) as { key: string };
  t.equal((await api.request('/v1/leads', { key: created.key })).status, 200, 'a key created by the CLI process');

  // A row written without its announcement (a lost notice) is not known: refused without a lookup...
  const sent = recordSql(t);
  const value = randomKey();
  const other = new pg.Client({ connectionString: url });
  await other.connect();
  t.teardown(() => other.end());
  await insertSilently(other, ws.workspace.id, value);
  t.equal((await api.request('/v1/leads', { key: value })).status, 401, '...a key whose notice was lost is unknown');
  t.equal(lookups(sent), 0, 'without a lookup');
  // ...until the creating process's notice arrives, as createKey sends it.
  await other.query(`SELECT pg_notify('auth_changed', $1)`, [`key_created:${keyCacheId(value)}`]);
  t.equal(await statusWithin(() => api.request('/v1/leads', { key: value }), 200), 200, 'its notice makes it known');

  // A notice lost with the listener's connection: the hashes are read again when it reconnects.
  const lost = randomKey();
  await insertSilently(other, ws.workspace.id, lost);
  t.equal((await api.request('/v1/leads', { key: lost })).status, 401);
  await other.query(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`,
    [LISTENER_NAME],
  );
  t.equal(await statusWithin(() => api.request('/v1/leads', { key: lost }), 200), 200, 'read again on reconnecting');
});

/** A key row as another process would write it, without the notice createKey sends. */
async function insertSilently(client: pg.Client, tenantId: string, value: string): Promise<void> {
  await client.query(
    `INSERT INTO api_keys (id, tenant_id, name, kind, mode, scopes, allowed_origins, ip_allowlist, hash, last4)
     VALUES ($1, $2, 'made elsewhere', 'secret', 'live', '{leads:read}', '{}', '{}', $3, $4)`,
    [randomUUID(), tenantId, hashKey(value), value.slice(-4)],
  );
}

async function statusWithin(request: () => Promise<Response>, wanted: number): Promise<number> {
  let status = 0;
  for (let i = 0; i < 100 && status !== wanted; i++) {
    const response = await request();
    status = response.status;
    await response.arrayBuffer();
    if (status !== wanted) await new Promise((r) => setTimeout(r, 50));
  }
  return status;
}

t.test('the known hashes: read once, by concurrent first requests together, and added to by creations', async (t) => {
  const api = await startApp(t);
  const ws = await seedWorkspace(api);
  const cache = new KeyLookupCache();
  t.teardown(() => cache.close());
  const sent = recordSql(t);
  const live = keyCacheId(ws.live);
  const answers = await Promise.all([live, keyCacheId(randomKey()), live].map((id) => cache.exists(api.pool, id)));
  t.same(answers, [true, false, true]);
  t.equal(sent.filter((q) => /SELECT hash FROM api_keys/.test(q.text)).length, 1, 'one reading for all of them');
  t.equal(cache.knownCount, 4, "the seeded workspace's four keys");
  const created = await ws.key({});
  t.ok(await cache.exists(api.pool, keyCacheId(created.value)), 'a creation in this process is known at once');
  t.equal(sent.filter((q) => /SELECT hash FROM api_keys/.test(q.text)).length, 1, 'without reading again');
});

const STORM_LIMIT = { capacity: 30, refill_per_second: 0.001 };

t.test('after a storm of unknown keys, a valid key from the same address is served', async (t) => {
  const api = await startApp(t, { config: { authFailureLimit: STORM_LIMIT } });
  const ws = await seedWorkspace(api);
  const sent = recordSql(t);
  const storm: Response[] = [];
  for (let i = 0; i < 200; i++) storm.push(await api.request('/v1/leads', { key: randomKey() }));
  t.same(await statusCounts(storm), { 401: 30, 429: 170 }, 'the storm gets its 30 failures, then 429');
  t.equal(lookups(sent), 0, 'and costs no lookup');
  const fresh = await ws.key({});
  t.equal((await api.request('/v1/leads', { key: fresh.value })).status, 200, 'a live key never looked up before');
  // A revocation elsewhere drops every cached lookup: the keys are looked up again, and still served.
  const unrelated = await ws.key({});
  await revokeKey(api.pool, ws.workspace.id, unrelated.id);
  for (const key of [ws.live, ws.test])
    t.equal((await api.request('/v1/leads', { key })).status, 200, 'a key whose cached lookup was dropped');
});

type StormStep = { kind: 'unknown' } | { kind: 'valid'; workspace: number } | { kind: 'created' } | { kind: 'dropped' };

t.test('unknown keys interleaved with valid ones from one address: every valid one succeeds', async (t) => {
  const api = await startApp(t, { config: { authFailureLimit: STORM_LIMIT } });
  const workspaces = [await seedWorkspace(api), await seedWorkspace(api)];
  const sent = recordSql(t);
  const step: fc.Arbitrary<StormStep> = fc.oneof(
    { weight: 6, arbitrary: fc.constant({ kind: 'unknown' as const }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('valid' as const), workspace: fc.nat(1) }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'created' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'dropped' as const }) },
  );
  let failuresAnswered401 = 0;
  await checkProperty(
    t,
    'valid keys are served during a storm of unknown ones, which costs no lookup',
    // Waves of requests sent at once, one wave after another.
    fc.asyncProperty(
      fc.array(fc.array(step, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 6 }),
      async (waves) => {
        // Keys of this run, never looked up yet: a valid request must not depend on a cached lookup.
        const keys = [await workspaces[0]!.key({}), await workspaces[1]!.key({ mode: 'test' })];
        const before = lookups(sent);
        let valid = 0;
        for (const wave of waves) {
          const answers = await Promise.all(
            wave.map(async (s) => {
              let key: string;
              if (s.kind === 'unknown') key = randomKey();
              else if (s.kind === 'valid') key = keys[s.workspace]!.value;
              else if (s.kind === 'created') key = (await workspaces[0]!.key({})).value;
              else {
                // An auth change drops every cached lookup, here through a revocation.
                const spare = await workspaces[1]!.key({});
                await revokeKey(api.pool, workspaces[1]!.workspace.id, spare.id);
                key = keys[1]!.value;
              }
              const response = await api.request('/v1/leads', { key });
              await response.arrayBuffer();
              return { s, status: response.status };
            }),
          );
          for (const { s, status } of answers) {
            if (s.kind === 'unknown') {
              if (status === 401) failuresAnswered401++;
              else if (status !== 429) throw new Error(`an unknown key answered ${status}`);
            } else {
              valid++;
              if (status !== 200) throw new Error(`a valid request (${s.kind}) answered ${status}`);
            }
          }
        }
        if (lookups(sent) - before > valid) throw new Error('an unknown key was looked up');
        return true;
      },
    ),
    25,
  );
  t.ok(failuresAnswered401 <= STORM_LIMIT.capacity, `at most ${STORM_LIMIT.capacity} failures answered 401`);
});

t.test('with REDIS_URL two API processes share the failure throttle', { skip: await redisSkipReason() }, async (t) => {
  const limit = { capacity: 10, refill_per_second: 0.001 };
  const api = await startApp(t, { config: { trustProxy: 1, authFailureLimit: limit } });
  const ws = await seedWorkspace(api);
  const prefix = `test:${randomUUID()}:`;
  await api.services.rateLimits.close();
  api.services.rateLimits = new RedisRateLimitStore(REDIS_URL, prefix);
  const services = await createServices(
    { ...loadConfig({}), ...api.services.config },
    { pool: api.pool, url: '', kind: 'external', close: async () => undefined },
  );
  await services.rateLimits.close();
  services.rateLimits = new RedisRateLimitStore(REDIS_URL, prefix);
  const second = await buildApp(services, { logger: false });
  const secondUrl = await second.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(async () => {
    await second.close();
    await services.rateLimits.close();
    await services.keys.close();
  });
  const statuses: number[] = [];
  for (let i = 0; i < 16; i++) {
    const base = i % 2 === 0 ? api.baseUrl : secondUrl;
    const response = await fetch(`${base}/v1/leads`, {
      headers: { authorization: `Bearer ${randomKey()}`, 'x-forwarded-for': '203.0.113.50' },
    });
    statuses.push(response.status);
  }
  t.same(statuses, [...Array(10).fill(401), ...Array(6).fill(429)], 'ten failures between the two, then refused');
  for (const base of [api.baseUrl, secondUrl])
    t.equal(
      (
        await fetch(`${base}/v1/leads`, {
          headers: { authorization: `Bearer ${ws.live}`, 'x-forwarded-for': '198.51.100.1' },
        })
      ).status,
      200,
      'a valid key from another address passes on both',
    );
});
