import { randomUUID } from 'node:crypto';
import t from 'tap';
import { buildApp } from '../../src/http/app.js';
import { createServices } from '../../src/bootstrap.js';
import { seedWorkspace, startApp } from '../support/app.js';
import { REDIS_URL, redisSkipReason } from '../support/redis.js';

const tight = {
  limits: {
    rate: {
      key: { capacity: 100, refill_per_second: 50 },
      scopes: { 'leads:read': { capacity: 5, refill_per_second: 0.01 } },
    },
  },
};

t.test(
  '2xx answers with a body carry the most constrained bucket; an empty bucket answers 429 rate_limited',
  async (t) => {
    const api = await startApp(t);
    const ws = await seedWorkspace(api, tight);
    const seen: Array<[string | null, string | null, string | null]> = [];
    for (let i = 0; i < 5; i++) {
      const response = await api.request('/v1/leads', { key: ws.live });
      t.equal(response.status, 200);
      seen.push([
        response.headers.get('ratelimit-limit'),
        response.headers.get('ratelimit-remaining'),
        response.headers.get('ratelimit-reset'),
      ]);
    }
    t.same(
      seen.map((s) => s.slice(0, 2)),
      [
        ['5', '4'],
        ['5', '3'],
        ['5', '2'],
        ['5', '1'],
        ['5', '0'],
      ],
      'the leads:read bucket (5) is the most constrained',
    );
    t.ok(
      seen.every(([, , reset]) => Number.isInteger(Number(reset)) && Number(reset) > 0),
      'RateLimit-Reset is whole seconds until full',
    );

    const refused = await api.request('/v1/leads', { key: ws.live });
    t.equal(refused.status, 429);
    const body = (await refused.json()) as Record<string, unknown>;
    t.match(body, { error: 'rate_limited', scope: 'leads:read', retry_after: Number, request_id: String });
    t.equal(refused.headers.get('retry-after'), String(body.retry_after), 'Retry-After matches retry_after');
    t.ok(Number.isInteger(body.retry_after) && (body.retry_after as number) >= 1);

    const created = await api.request('/v1/leads', {
      key: ws.live,
      method: 'POST',
      json: { full_name: 'Other Scope', email: 'other@example.com', consent: true },
    });
    t.equal(created.status, 201, 'another scope has its own bucket');
    t.ok(created.headers.get('ratelimit-limit'), '201 answers carry the headers too');
    const invalid = await api.request('/v1/leads', {
      key: ws.live,
      method: 'POST',
      json: { full_name: '', consent: true },
    });
    t.equal(invalid.status, 400);
    const missing = await api.request(`/v1/webhooks/${randomUUID()}`, { key: ws.live, method: 'DELETE' });
    t.equal(missing.status, 404);
    for (const refusal of [invalid, missing]) {
      const [limit, remaining, reset] = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'].map((h) =>
        Number(refusal.headers.get(h)),
      );
      t.ok(
        limit! > 0 && remaining! >= 0 && remaining! < limit! && reset! >= 1,
        `a ${refusal.status} given after the buckets were taken carries the headers`,
      );
    }

    const other = await ws.key({});
    t.equal((await api.request('/v1/leads', { key: other.value })).status, 200, 'another key has its own buckets');
  },
);

t.test('the whole-key bucket limits every scope together', async (t) => {
  const api = await startApp(t);
  const ws = await seedWorkspace(api, { limits: { rate: { key: { capacity: 3, refill_per_second: 0.01 } } } });
  t.equal((await api.request('/v1/leads', { key: ws.live })).status, 200);
  t.equal((await api.request('/v1/meta/fields', { key: ws.live })).status, 200);
  t.equal((await api.request('/v1/leads', { key: ws.live })).status, 200);
  const refused = await api.request('/v1/meta/fields', { key: ws.live });
  t.equal(refused.status, 429);
  t.match(await refused.json(), { error: 'rate_limited', scope: 'key' });
});

t.test('with REDIS_URL two API processes enforce one limit', { skip: await redisSkipReason() }, async (t) => {
  const api = await startApp(t, { config: { redisUrl: REDIS_URL } });
  const ws = await seedWorkspace(api, tight);
  const services = await createServices(
    { ...api.services.config, redisUrl: REDIS_URL },
    { pool: api.pool, url: '', kind: 'external', close: async () => undefined },
  );
  const second = await buildApp(services, { logger: false });
  const secondUrl = await second.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(async () => {
    await second.close();
    await services.rateLimits.close();
  });
  const statuses: number[] = [];
  for (let i = 0; i < 8; i++) {
    const base = i % 2 === 0 ? api.baseUrl : secondUrl;
    statuses.push((await fetch(`${base}/v1/leads`, { headers: { authorization: `Bearer ${ws.live}` } })).status);
  }
  t.same(statuses, [200, 200, 200, 200, 200, 429, 429, 429], 'five allowed between the two processes, then refused');
});

t.test(
  '429 quota_exceeded once the monthly live-lead quota is used; sandbox leads and duplicates do not count',
  async (t) => {
    const api = await startApp(t);
    const ws = await seedWorkspace(api, { limits: { monthly_leads: 2 } });
    const create = (key: string, n: number) =>
      api.request('/v1/leads', {
        key,
        method: 'POST',
        json: { full_name: `Quota ${n}`, email: `quota${n}@example.com`, consent: true },
      });
    t.equal((await create(ws.live, 1)).status, 201);
    t.equal((await create(ws.live, 1)).status, 200, 'a duplicate is answered and not counted');
    t.equal((await create(ws.live, 2)).status, 201);
    const refused = await create(ws.live, 3);
    t.equal(refused.status, 429);
    t.match(await refused.json(), { error: 'quota_exceeded', message: /quota/, request_id: String });
    t.equal((await create(ws.test, 3)).status, 201, 'the sandbox is not limited by the live quota');
    t.equal((await api.request('/v1/leads', { key: ws.live })).status, 200, 'reads go on');
  },
);

t.test('a browser can read the 429 of its public key', async (t) => {
  const api = await startApp(t);
  const ws = await seedWorkspace(api, {
    limits: { rate: { scopes: { 'leads:create': { capacity: 1, refill_per_second: 0.01 } } } },
  });
  const origin = 'https://www.example.com';
  const submit = (n: number) =>
    api.request('/v1/leads', {
      key: ws.publicLive,
      method: 'POST',
      headers: { origin },
      json: { full_name: `Browser ${n}`, email: `browser${n}@example.com`, consent: true, captcha_token: 'none' },
    });
  const first = await submit(1);
  t.equal(first.status, 201);
  const limited = await submit(2);
  t.equal(limited.status, 429);
  t.equal(
    limited.headers.get('access-control-allow-origin'),
    origin,
    'the refusal carries the CORS header for the checked origin',
  );
  const foreign = await api.request('/v1/leads', {
    key: ws.publicLive,
    method: 'POST',
    headers: { origin: 'https://evil.example' },
    json: { full_name: 'X', email: 'x@example.com', consent: true, captcha_token: 'none' },
  });
  t.equal(foreign.status, 403);
  t.equal(foreign.headers.get('access-control-allow-origin'), null, 'a foreign origin gets none');
});
