import t from 'tap';
import { KeyLookupCache } from '../../src/keys/key-cache.js';
import { revokeKey } from '../../src/keys/repository.js';
import { seedWorkspace, startApp, type TestApp } from '../support/app.js';
import { runCliJson } from '../support/cli.js';
import { recordSql, type SentStatement } from '../support/sql-recorder.js';

const preflight = (api: TestApp, origin: string) =>
  api.request('/v1/leads', {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
  });

/** The preflight's origin lookups among the statements sent. */
const originLookups = (sent: SentStatement[]) => sent.filter((s) => s.text.includes('allowed_origins @>'));

async function statusWithin(request: () => Promise<Response>, wanted: number, tries = 100): Promise<number> {
  let status = 0;
  for (let i = 0; i < tries; i++) {
    status = (await request()).status;
    if (status === wanted) return status;
    await new Promise((r) => setTimeout(r, 100));
  }
  return status;
}

t.test('repeated preflights of one origin cost one lookup, allowed or refused', async (t) => {
  const api = await startApp(t);
  const ws = await seedWorkspace(api);
  const origin = 'https://form.consultancy.example';
  await ws.key({ kind: 'public', origins: [origin] });
  const sent = recordSql(t);
  for (let i = 0; i < 40; i++) t.equal((await preflight(api, origin)).status, 204, `allowed preflight ${i}`);
  t.equal(originLookups(sent).length, 1, '40 preflights of an allowed origin: one lookup');
  // Under the failed-authentication budget of the address (30 by default).
  for (let i = 0; i < 20; i++) t.equal((await preflight(api, 'https://other.example')).status, 403);
  t.equal(originLookups(sent).length, 2, '20 preflights of a refused origin: one more lookup');
});

t.test(
  'refused preflights count as failed authentications of the address: a flood of origins is bounded',
  async (t) => {
    const api = await startApp(t, { config: { authFailureLimit: { capacity: 5, refill_per_second: 1 / 60 } } });
    const ws = await seedWorkspace(api);
    const sent = recordSql(t);
    const statuses: number[] = [];
    for (let i = 0; i < 50; i++) {
      const response = await preflight(api, `https://made-up-${i}.example`);
      statuses.push(response.status);
      const body = (await response.json()) as Record<string, unknown>;
      if (response.status === 429)
        t.match(body, {
          error: 'rate_limited',
          scope: 'failed_authentication',
          retry_after: Number,
          request_id: String,
        });
    }
    t.same(statuses.slice(0, 5), [403, 403, 403, 403, 403], 'the first five made-up origins are refused');
    t.ok(
      statuses.slice(5).every((s) => s === 429),
      'then the address has no failures left: 429',
    );
    t.ok(originLookups(sent).length <= 6, `50 made-up origins cost ${originLookups(sent).length} lookups (at most 6)`);
    // One budget per address for made-up keys and made-up origins alike.
    // The last character changed (a key already ending in x would otherwise be sent unchanged, 1 run in 62).
    const bad = await api.request('/v1/leads', { key: `${ws.live.slice(0, -1)}${ws.live.endsWith('x') ? 'y' : 'x'}` });
    t.equal(bad.status, 429, 'a wrong key from the same address now gets 429 too: one budget for both');
  },
);

t.test('a revoked key’s origin stops being allowed at once, in this process and through NOTIFY', async (t) => {
  const api = await startApp(t);
  // A cache that would keep answers for ten minutes: only the drop on the auth change can clear it.
  const keys = new KeyLookupCache(600_000, 10_000, Date.now, 600_000);
  api.services.keys = keys;
  const url = api.services.config.databaseUrl!;
  await keys.listen(url);
  t.teardown(() => keys.close());
  const ws = await seedWorkspace(api);

  const here = 'https://here.example';
  const hereKey = await ws.key({ kind: 'public', origins: [here] });
  t.equal((await preflight(api, here)).status, 204, 'allowed, and now cached');
  await revokeKey(api.pool, ws.workspace.id, hereKey.id);
  t.equal((await preflight(api, here)).status, 403, 'revoked in this process: refused at once');

  const there = 'https://there.example';
  const thereKey = await ws.key({ kind: 'public', origins: [there] });
  t.equal((await preflight(api, there)).status, 204, 'allowed, and now cached');
  await runCliJson(url, ['key', 'revoke', ws.workspace.slug, thereKey.id]);
  t.equal(await statusWithin(() => preflight(api, there), 403), 403, 'revoked by the CLI process: refused');

  const later = 'https://later.example';
  t.equal((await preflight(api, later)).status, 403, 'refused, and now cached');
  await ws.key({ kind: 'public', origins: [later] });
  t.equal((await preflight(api, later)).status, 204, 'a new key allowing it is honoured at once');
});

t.test('the origin answers of the key cache: bounded, dropped on changes, never stored stale', async (t) => {
  let clock = 0;
  // 5 s for answers, at most three origins.
  const cache = new KeyLookupCache(5_000, 10, () => clock, 5_000, 3);
  t.teardown(() => cache.close());
  const forever = { allowed: true, allowedUntil: null };

  cache.setOriginAllowed('https://a.example', forever, cache.version);
  t.equal(cache.originAllowed('https://a.example', 0), true, 'kept');
  clock = 5_000;
  t.equal(cache.originAllowed('https://a.example', 0), undefined, 'gone after 5 s');

  cache.setOriginAllowed('https://b.example', { allowed: true, allowedUntil: 1_000 }, cache.version);
  t.equal(cache.originAllowed('https://b.example', 999), true, 'allowed before the last allowing key expires');
  t.equal(cache.originAllowed('https://b.example', 1_000), undefined, 'asked again once it has expired');

  const before = cache.version;
  cache.clear();
  cache.setOriginAllowed('https://c.example', forever, before);
  t.equal(cache.originAllowed('https://c.example', 0), undefined, 'an answer read before a drop is not stored');
  const beforeCreation = cache.version;
  cache.keyCreated('some-hash');
  cache.setOriginAllowed('https://c.example', { allowed: false, allowedUntil: null }, beforeCreation);
  t.equal(cache.originAllowed('https://c.example', 0), undefined, 'nor one read before a key creation');

  for (const name of ['d', 'e', 'f', 'g']) cache.setOriginAllowed(`https://${name}.example`, forever, cache.version);
  t.same(
    ['d', 'e', 'f', 'g'].map((name) => cache.originAllowed(`https://${name}.example`, 0)),
    [undefined, true, true, true],
    'at most three origins: the oldest goes first',
  );
  const long = `https://${'x'.repeat(300)}.example`;
  cache.setOriginAllowed(long, { allowed: false, allowedUntil: null }, cache.version);
  t.equal(cache.originAllowed(long, 0), undefined, 'an origin longer than any real one is not kept');
  cache.keyCreated('another-hash');
  t.equal(cache.originAllowed('https://g.example', 0), undefined, 'a key creation drops every origin answer');
});
