import t from 'tap';
import { seedWorkspace, startApp } from '../support/app.js';
import { parsePrometheus, sampleValue } from '../support/prometheus.js';

const METRICS_TOKEN = 'metrics-token-for-tests-0123456789';
const tight = {
  limits: {
    rate: {
      key: { capacity: 100, refill_per_second: 50 },
      scopes: { 'leads:read': { capacity: 2, refill_per_second: 0.01 } },
    },
  },
};

t.test('GET /metrics does not exist without METRICS_TOKEN', async (t) => {
  const api = await startApp(t);
  const response = await api.request('/metrics');
  t.equal(response.status, 404);
  t.match(await response.json(), { error: 'not_found', request_id: String });
});

t.test('GET /metrics refuses a missing or wrong token in the Error shape', async (t) => {
  const api = await startApp(t, { config: { metricsToken: METRICS_TOKEN } });
  const tried: Record<string, string>[] = [
    {},
    { authorization: 'Bearer wrong' },
    { authorization: `Basic ${METRICS_TOKEN}` },
  ];
  for (const headers of tried) {
    const response = await api.request('/metrics', { headers });
    t.equal(response.status, 401);
    t.match(await response.json(), { error: 'invalid_metrics_token', message: String, request_id: String });
  }
});

t.test('after traffic, the scrape counts requests, leads, 429s and shows the gauges', async (t) => {
  const api = await startApp(t, { config: { metricsToken: METRICS_TOKEN } });
  const ws = await seedWorkspace(api, tight);
  const lead = { full_name: 'Metric Person', email: 'metric@example.com', consent: true };
  t.equal((await api.request('/v1/leads', { key: ws.live, method: 'POST', json: lead })).status, 201);
  t.equal((await api.request('/v1/leads', { key: ws.live, method: 'POST', json: lead })).status, 200);
  const replayHeaders = { 'idempotency-key': 'metrics-test-1' };
  const other = { ...lead, email: 'other-metric@example.com' };
  for (let i = 0; i < 2; i++)
    await api.request('/v1/leads', { key: ws.live, method: 'POST', json: other, headers: replayHeaders });
  const reads = [];
  for (let i = 0; i < 3; i++) reads.push((await api.request('/v1/leads', { key: ws.live })).status);
  t.same(reads, [200, 200, 429], 'the leads:read bucket of 2 refuses the third read');
  t.equal((await api.request('/v1/leads/not-an-id', { key: ws.test })).status, 404, 'another key, its own buckets');

  const scrape = await api.request('/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  t.equal(scrape.status, 200);
  t.match(scrape.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  const exposition = await scrape.text();
  const { types, samples } = parsePrometheus(exposition);

  t.equal(types.get('http_requests_total'), 'counter');
  t.equal(types.get('http_request_duration_seconds'), 'histogram');
  t.equal(sampleValue(samples, 'http_requests_total', { method: 'POST', route: '/v1/leads', status: '201' }), 3);
  t.equal(sampleValue(samples, 'http_requests_total', { method: 'POST', route: '/v1/leads', status: '200' }), 1);
  t.equal(sampleValue(samples, 'http_requests_total', { method: 'GET', route: '/v1/leads', status: '429' }), 1);
  t.equal(
    sampleValue(samples, 'http_requests_total', { method: 'GET', route: '/v1/leads/:id', status: '404' }),
    1,
    'labelled by route template, not by the path sent',
  );
  t.notOk(
    samples.some((s) => s.labels.route?.includes('not-an-id')),
    'no raw path becomes a label value',
  );
  t.equal(
    sampleValue(samples, 'http_request_duration_seconds_count', {
      method: 'POST',
      route: '/v1/leads',
      status: '201',
    }),
    3,
  );
  t.equal(
    sampleValue(samples, 'http_request_duration_seconds_bucket', {
      method: 'POST',
      route: '/v1/leads',
      status: '201',
      le: '+Inf',
    }),
    3,
  );

  // The second capture of `lead` is a duplicate (200); the replay of `other` answers its stored 201 again.
  t.equal(sampleValue(samples, 'leads_captured_total', { outcome: 'created' }), 2);
  t.equal(sampleValue(samples, 'leads_captured_total', { outcome: 'duplicate' }), 1);
  t.equal(sampleValue(samples, 'leads_captured_total', { outcome: 'replayed' }), 1);
  t.equal(sampleValue(samples, 'rate_limited_total', { scope: 'leads:read' }), 1);

  for (const gauge of [
    'db_pool_waiting',
    'webhook_deliveries_due',
    'webhook_deliveries_in_flight',
    'webhook_fanout_lag_seconds',
    'webhook_fanout_lag_events',
  ]) {
    t.equal(types.get(gauge), 'gauge', `${gauge} is a gauge`);
    t.type(sampleValue(samples, gauge), 'number', `${gauge} has a value`);
  }
  t.equal(sampleValue(samples, 'db_pool_waiting'), 0);
  // No worker runs here: the events of the captures wait for a fan-out.
  t.ok(sampleValue(samples, 'webhook_fanout_lag_events')! >= 3, 'the captures are events the fan-out has not read');
  t.equal(types.get('webhook_deliveries_total'), 'counter');
  t.equal(types.get('webhook_delivery_duration_seconds'), 'histogram');
  t.equal(types.get('webhook_delivery_claims_total'), 'counter');
  t.equal(types.get('webhook_delivery_claim_duration_seconds'), 'histogram');
  t.equal(types.get('webhook_delivery_recording_seconds'), 'histogram');
});
