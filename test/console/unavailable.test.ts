import type pg from 'pg';
import t from 'tap';
import { memberOf } from '../identity/support.js';
import { consoleFixture } from './support.js';

// A busy service answers a console page as it answers the API (test/observability/load-shedding.test.ts): 503 with
// Retry-After, a page that says to try again, and no "something went wrong" 500 (seen under bench:soak on 2026-11-29).
t.test('a console page of a saturated service answers 503 with Retry-After, not 500', async (t) => {
  const f = await consoleFixture(t, { config: { maxPoolWaiting: 5 } });
  const c = f.client();
  t.equal((await c.signIn(memberOf('counsellor'))).status, 303);
  const leads = `/console/w/${f.ws.workspace.slug}/leads`;
  t.equal((await c.get(leads)).status, 200, 'the page opens while connections are free');

  // Every connection is taken, and a checkout waits at most 300 ms: the page's first query times out.
  const pool = f.app.services.pool;
  const held: pg.PoolClient[] = [];
  t.teardown(() => held.forEach((client) => client.release()));
  for (let i = 0; i < (pool.options.max ?? 10); i++) held.push(await pool.connect());
  // Set once every connection is held: opening the last ones on a loaded machine may take longer than 300 ms.
  pool.options.connectionTimeoutMillis = 300;
  const timedOut = await c.get(leads);
  t.equal(timedOut.status, 503, 'a checkout that timed out: 503');
  t.equal(timedOut.headers.get('retry-after'), '1');
  t.match(timedOut.text, 'too busy to answer right now');
  t.notMatch(timedOut.text, 'Something went wrong');
  t.match(timedOut.headers.get('content-type') ?? '', /^text\/html/, 'a page, as every console answer');

  // More than 5 checkouts waiting: the service sheds new requests before any lookup, console pages too.
  const blocking = Array.from({ length: 10 }, () => pool.connect().catch(() => undefined));
  await new Promise((resolve) => setTimeout(resolve, 250));
  const shed = await c.get(leads);
  t.equal(shed.status, 503, 'a shed request: 503');
  t.equal(shed.headers.get('retry-after'), '1');
  t.match(shed.text, 'too busy to answer right now');
  await Promise.all(blocking);

  for (const client of held.splice(0)) client.release();
  await new Promise((resolve) => setTimeout(resolve, 250));
  t.equal((await c.get(leads)).status, 200, 'the page opens again once connections are free');
});
