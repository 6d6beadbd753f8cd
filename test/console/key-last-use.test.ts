import t from 'tap';
import { generateKey, hashKey } from '../../src/keys/api-key.js';
import { LastUseRecorder, writeLastUse } from '../../src/keys/last-use.js';
import { memberOf } from '../identity/support.js';
import { TestClock, type TestApp } from '../support/app.js';
import { runCliJson } from '../support/cli.js';
import { recordSql, type SentStatement } from '../support/sql-recorder.js';
import { consoleFixture } from './support.js';

const LAST_USE_WRITE = /UPDATE api_keys SET last_used_at/;
const writes = (sent: SentStatement[]) => sent.filter((s) => LAST_USE_WRITE.test(s.text)).length;
const last4 = (value: string) => value.slice(-4);

async function storedLastUse(app: TestApp, value: string): Promise<Date | null> {
  const result = await app.pool.query<{ last_used_at: Date | null }>(
    `SELECT last_used_at FROM api_keys WHERE hash = $1`,
    [hashKey(value)],
  );
  return result.rows[0]?.last_used_at ?? null;
}

/** The write is not awaited by the request: wait (bounded) until it has landed. */
async function landed(app: TestApp, value: string, after: Date | null = null): Promise<Date | null> {
  for (let i = 0; i < 200; i++) {
    const stored = await storedLastUse(app, value);
    if (stored && (!after || stored.getTime() > after.getTime())) return stored;
    await new Promise((r) => setTimeout(r, 25));
  }
  return storedLastUse(app, value);
}

/** The console list's row of the key ending in these four characters. */
const rowOf = (page: string, value: string) => new RegExp(`…${last4(value)}</td>[\\s\\S]*?</tr>`).exec(page)?.[0] ?? '';

t.test(
  'a key used over HTTP shows its last use in the console and in `key list`; an unused one shows never',
  async (t) => {
    const clock = new TestClock(new Date('2026-11-26T09:30:00.000Z'));
    const f = await consoleFixture(t, { clock });
    const sent = recordSql(t);
    const admin = f.client();
    await admin.signIn(memberOf('admin'));
    const keysPage = `/console/w/${f.ws.workspace.slug}/keys`;
    t.match((await admin.get(keysPage)).text, '<th scope="col">Last use</th>');
    t.match(rowOf((await admin.get(keysPage)).text, f.ws.live), '<td>never</td>', 'never used: "never"');

    t.equal((await f.app.request('/v1/leads', { key: f.ws.live })).status, 200);
    t.equal((await f.app.request('/v1/leads', { key: f.ws.live })).status, 200, 'a second use within the minute');
    const first = await landed(f.app, f.ws.live);
    t.same(first, clock.now(), 'the first use is recorded at the request’s time');
    t.equal(writes(sent), 1, 'two uses within a minute: one write');

    const row = rowOf((await admin.get(keysPage)).text, f.ws.live);
    t.match(
      row,
      'title="2026-11-26 09:30 UTC"',
      'the console shows the last use (in the workspace’s zone, the UTC instant on hover)',
    );
    t.match(rowOf((await admin.get(keysPage)).text, f.ws.test), '<td>never</td>', 'the unused test key: never');

    const url = (f.app.pool as unknown as { options: { connectionString: string } }).options.connectionString;
    const listed = await runCliJson<Array<{ last4: string; last_used_at: string | null }>>(url, [
      'key',
      'list',
      f.ws.workspace.slug,
    ]);
    t.equal(listed.find((k) => k.last4 === last4(f.ws.live))?.last_used_at, '2026-11-26T09:30:00.000Z', 'key list');
    t.equal(listed.find((k) => k.last4 === last4(f.ws.test))?.last_used_at, null, 'key list: never used');

    clock.advance(61_000);
    t.equal((await f.app.request('/v1/leads', { key: f.ws.live })).status, 200);
    t.same(await landed(f.app, f.ws.live, first), clock.now(), 'over a minute later the last use moves');
    t.equal(writes(sent), 2);
  },
);

t.test('refused requests never record a use', async (t) => {
  const f = await consoleFixture(t);
  const sent = recordSql(t);
  const readOnly = await f.ws.key({ scopes: ['leads:read'] });
  const restricted = await f.ws.key({ ips: ['192.0.2.1'] });
  const post = { method: 'POST', json: { full_name: 'No Use', email: 'no.use@example.com', consent: true } };
  t.equal((await f.app.request('/v1/leads', { key: readOnly.value, ...post })).status, 403, 'wrong scope');
  t.equal((await f.app.request('/v1/leads', { key: restricted.value })).status, 403, 'wrong address');
  t.equal((await f.app.request('/v1/leads', { key: f.ws.publicLive })).status, 403, 'a public key on a secret route');
  t.equal((await f.app.request('/v1/leads', { key: generateKey('secret', 'live') })).status, 401, 'unknown key');
  // A use of a valid key afterwards is the first write: none of the refusals above sent one.
  t.equal((await f.app.request('/v1/leads', { key: f.ws.live })).status, 200);
  await landed(f.app, f.ws.live);
  t.equal(writes(sent), 1, 'only the successful request wrote');
  for (const value of [readOnly.value, restricted.value, f.ws.publicLive])
    t.equal(await storedLastUse(f.app, value), null, 'a refused key has no last use');
});

t.test('another process within the minute sends the write, which changes nothing', async (t) => {
  const f = await consoleFixture(t);
  const [key] = (
    await f.app.pool.query<{ id: string }>(`SELECT id FROM api_keys WHERE hash = $1`, [hashKey(f.ws.live)])
  ).rows;
  const at = new Date('2026-11-26T10:00:00.000Z');
  t.equal(await writeLastUse(f.app.pool, key!.id, at), true, 'the first write');
  t.equal(await writeLastUse(f.app.pool, key!.id, new Date(at.getTime() + 59_000)), false, 'within a minute: none');
  t.same(await storedLastUse(f.app, f.ws.live), at, 'the value did not move');
  t.equal(await writeLastUse(f.app.pool, key!.id, new Date(at.getTime() + 61_000)), true, 'over a minute later');

  // A failed write is logged by name, without the key's value or the statement's.
  const logged: Array<Record<string, unknown>> = [];
  const failing = { query: () => Promise.reject(Object.assign(new Error(`boom ${f.ws.live}`), { code: '57P01' })) };
  new LastUseRecorder().record(failing, key!.id, at, { warn: (details) => logged.push(details) });
  await new Promise((r) => setImmediate(r));
  t.same(logged, [{ key_id: key!.id, error: 'Error', code: '57P01' }]);
  t.notMatch(JSON.stringify(logged), f.ws.live);
});
