import { randomUUID } from 'node:crypto';
import pg from 'pg';
import t, { type Test } from 'tap';
import { buildApp } from '../../src/http/app.js';
import { createServices } from '../../src/bootstrap.js';
import { loadConfig } from '../../src/config.js';
import { generateKey, hashKey } from '../../src/keys/api-key.js';
import { announceKeyCreated, KeyLookupCache } from '../../src/keys/key-cache.js';
import { keyCacheId } from '../../src/keys/repository.js';
import { MemoryRateLimitStore } from '../../src/ratelimit/memory-store.js';
import { RedisRateLimitStore } from '../../src/ratelimit/redis-store.js';
import { seedWorkspace, startApp, type TestApp } from '../support/app.js';
import { runCliJson } from '../support/cli.js';
import { REDIS_URL, redisSkipReason } from '../support/redis.js';
import { recordSql, type SentStatement } from '../support/sql-recorder.js';

const KEY_LOOKUP = /FROM api_keys k JOIN workspaces w/;
const lookups = (sent: SentStatement[]) => sent.filter((q) => KEY_LOOKUP.test(q.text)).length;
const randomKey = () => generateKey('secret', 'live');
const from = (ip: string, key: string) => ({ key, headers: { 'x-forwarded-for': ip } });

/** The app behind a proxy (so X-Forwarded-For names the client), its buckets on a clock that does not move. */
async function throttledApp(t: Test): Promise<TestApp> {
  const api = await startApp(t, { config: { trustProxy: true } });
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

t.test('2,000 random well-formed keys from one address cost as many lookups as the burst allows', async (t) => {
  const api = await throttledApp(t);
  const { capacity } = api.services.config.authFailureLimit;
  t.equal(capacity, 30, 'the default burst is 30 failures');
  const sent = recordSql(t);
  const responses: Response[] = [];
  for (let i = 0; i < 2000; i++) responses.push(await api.request('/v1/leads', from('203.0.113.9', randomKey())));
  t.same(await statusCounts(responses), { 401: capacity, 429: 2000 - capacity }, 'the burst answers 401, then 429');
  t.equal(lookups(sent), capacity, `${capacity} database lookups, not 2,000`);

  // One wrong key repeated from another address: looked up once, then answered from the "unknown" cache.
  const wrong = randomKey();
  const before = lookups(sent);
  const repeated: Response[] = [];
  for (let i = 0; i < 50; i++) repeated.push(await api.request('/v1/leads', from('198.51.100.20', wrong)));
  t.same(await statusCounts(repeated), { 401: capacity, 429: 50 - capacity }, 'failures count even when cached');
  t.equal(lookups(sent) - before, 1, 'a repeated unknown key is looked up once');

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

  // A valid key the service has not seen lately needs a lookup: from the throttled address it waits too.
  const fresh = await ws.key({});
  t.equal((await api.request('/v1/leads', from('203.0.113.10', fresh.value))).status, 429);
  // The same key from another address passes, and once known it passes from the throttled address as well.
  t.equal((await api.request('/v1/leads', from('198.51.100.7', fresh.value))).status, 200, 'another address passes');
  t.equal(
    (await api.request('/v1/leads', from('203.0.113.10', fresh.value))).status,
    200,
    'a key known to the process passes even from the throttled address',
  );
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

t.test('a new key works at once; a cached "unknown" goes when a key is created here or elsewhere', async (t) => {
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

  // A value presented before a row with its hash exists (only possible if a value were ever known before its
  // creation) is cached as unknown...
  const sent = recordSql(t);
  const value = randomKey();
  t.equal((await api.request('/v1/leads', { key: value })).status, 401);
  const other = new pg.Client({ connectionString: url });
  await other.connect();
  t.teardown(() => other.end());
  await other.query(
    `INSERT INTO api_keys (id, tenant_id, name, kind, mode, scopes, allowed_origins, ip_allowlist, hash, last4)
     VALUES ($1, $2, 'made elsewhere', 'secret', 'live', '{leads:read}', '{}', '{}', $3, $4)`,
    [randomUUID(), ws.workspace.id, hashKey(value), value.slice(-4)],
  );
  const lookupsBefore = lookups(sent);
  t.equal((await api.request('/v1/leads', { key: value })).status, 401, '...and answered from the cache for now');
  t.equal(lookups(sent), lookupsBefore, 'without a lookup');
  // ...until the creating process announces the key, as createKey does.
  await announceOnly(other, keyCacheId(value));
  let status = 0;
  for (let i = 0; i < 100 && status !== 200; i++) {
    status = (await api.request('/v1/leads', { key: value })).status;
    if (status !== 200) await new Promise((r) => setTimeout(r, 50));
  }
  t.equal(status, 200, "another process's creation notice drops the cached unknown");
});

/** The NOTIFY createKey sends, from another connection (another process's view of it). */
async function announceOnly(client: pg.Client, cacheId: string): Promise<void> {
  await client.query(`SELECT pg_notify('auth_changed', $1)`, [`key_created:${cacheId}`]);
}

t.test('the cache of unknown keys: bounded, expiring, and dropped by a creation in this process', async (t) => {
  let now = 1_000_000;
  const cache = new KeyLookupCache(5_000, 10, () => now, 5_000, 3);
  t.teardown(() => cache.close());
  for (const id of ['a', 'b', 'c', 'd']) cache.setUnknown(id, cache.version);
  t.same(
    ['a', 'b', 'c', 'd'].map((id) => cache.isUnknown(id)),
    [false, true, true, true],
    'the oldest goes when full',
  );
  now += 5_000;
  t.notOk(cache.isUnknown('d'), 'entries expire after their time');
  const version = cache.version;
  cache.setUnknown('e', version);
  await announceKeyCreated({ query: async () => ({ rows: [] }) } as never, 'e');
  t.notOk(cache.isUnknown('e'), 'a creation in this process drops the entry at once');
  cache.setUnknown('e', version);
  t.notOk(cache.isUnknown('e'), 'a lookup that began before the creation does not store its answer after it');
});

t.test('with REDIS_URL two API processes share the failure throttle', { skip: await redisSkipReason() }, async (t) => {
  const limit = { capacity: 10, refill_per_second: 0.001 };
  const api = await startApp(t, { config: { trustProxy: true, authFailureLimit: limit } });
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
