import type pg from 'pg';
import t from 'tap';
import { seedWorkspace, startApp } from '../support/app.js';
import { parsePrometheus, sampleValue } from '../support/prometheus.js';

const METRICS_TOKEN = 'metrics-token-for-tests-0123456789';
const ERROR_BODY = { error: 'overloaded', message: String, request_id: /^req_[0-9a-f]{24}$/ };

t.test('a saturated service answers 503 overloaded with Retry-After, quickly, instead of queueing', async (t) => {
  const api = await startApp(t, { config: { metricsToken: METRICS_TOKEN, maxPoolWaiting: 5 } });
  const ws = await seedWorkspace(api, { limits: { rate: { key: { capacity: 10_000, refill_per_second: 1000 } } } });
  // Every connection of the API pool is taken (as by long requests), and checkouts wait at most 300 ms.
  const pool = api.services.pool;
  const held: pg.PoolClient[] = [];
  t.teardown(() => held.forEach((client) => client.release()));
  for (let i = 0; i < (pool.options.max ?? 10); i++) held.push(await pool.connect());
  // Set once every connection is held: opening the last ones on a loaded machine may take longer than 300 ms.
  pool.options.connectionTimeoutMillis = 300;

  // A first wave waits for a connection: each answers 503 once its checkout times out.
  const firstWave = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      api.request('/v1/leads', {
        key: ws.live,
        method: 'POST',
        json: { full_name: `Waiting ${i}`, email: `waiting-${i}@example.com`, consent: true },
        signal: AbortSignal.timeout(20_000),
      }),
    ),
  );
  // While the first wave waited, more than 5 requests waited for a connection: the next requests are shed at once.
  const statuses = firstWave.map((r) => r.status);
  t.same(new Set(statuses), new Set([503]), 'every request of the saturated service answers 503');
  for (const response of firstWave) {
    t.equal(response.headers.get('retry-after'), '1');
    t.ok(response.headers.get('request-id'));
    t.match(await response.json(), ERROR_BODY);
  }

  // With more than 5 checkouts waiting, the pool health check marks the service overloaded: new requests are refused
  // in the onRequest hook, before any key lookup.
  const blocking = Array.from({ length: 10 }, () => pool.connect().catch(() => undefined));
  await new Promise((resolve) => setTimeout(resolve, 250));
  const shed = await api.request('/v1/leads', { key: ws.live, signal: AbortSignal.timeout(20_000) });
  t.equal(shed.status, 503);
  t.equal(shed.headers.get('retry-after'), '1');
  t.match(await shed.json(), ERROR_BODY);
  await Promise.all(blocking);

  const scrape = await api.request('/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  t.equal(scrape.status, 200, 'metrics are served under pressure');
  const { samples } = parsePrometheus(await scrape.text());
  t.ok(sampleValue(samples, 'http_load_shed_total', { cause: 'pool_timeout' })! >= 1, 'timeouts are counted');
  t.ok(sampleValue(samples, 'http_load_shed_total', { cause: 'pool_waiting' })! >= 1, 'shed requests are counted');

  for (const client of held.splice(0)) client.release();
  await new Promise((resolve) => setTimeout(resolve, 250));
  const recovered = await api.request('/v1/leads', { key: ws.live });
  t.equal(recovered.status, 200, 'the service answers again once connections are free');
});
