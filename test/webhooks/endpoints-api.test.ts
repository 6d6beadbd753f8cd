import { randomUUID } from 'node:crypto';
import t from 'tap';
import { EVENT_KINDS } from '../../src/shared/enums.js';
import { seedWorkspace, startApp } from '../support/app.js';
import { webhookHarness } from './support/harness.js';
import { CURRENT_PAYLOAD_VERSION } from '../../src/webhooks/versions/index.js';

const EVENTS = ['lead.created', 'lead.updated'];

t.test(
  'POST creates an endpoint with a one-time secret, stored encrypted; GET lists it without the secret',
  async (t) => {
    const h = await webhookHarness(t);
    const url = h.receiver.url('localhost');
    const response = await h.request('/v1/webhooks', {
      method: 'POST',
      key: h.ws.live,
      json: { url, description: 'CRM sync', events: EVENTS },
    });
    t.equal(response.status, 201);
    t.ok(response.headers.get('ratelimit-limit'), 'rate-limit headers on the 201');
    const created = (await response.json()) as Record<string, unknown>;
    t.match(created.secret, /^whsec_[A-Za-z0-9]{32}$/, 'the secret has the spec form');
    t.same(Object.keys(created).sort(), [
      'consecutive_failures',
      'created_at',
      'description',
      'events',
      'id',
      'paused_at',
      'paused_reason',
      'payload_version',
      'previous_secret_valid_until',
      'rate_limit_per_second',
      'secret',
      'status',
      'updated_at',
      'url',
    ]);
    t.match(created, {
      url,
      description: 'CRM sync',
      events: EVENTS,
      status: 'active',
      consecutive_failures: 0,
      paused_reason: null,
      paused_at: null,
      previous_secret_valid_until: null,
      payload_version: CURRENT_PAYLOAD_VERSION,
    });

    const stored = await h.pool.query<{ sealed_secret: string }>(
      'SELECT sealed_secret FROM webhook_endpoints WHERE id = $1',
      [created.id],
    );
    t.notOk(
      stored.rows[0]!.sealed_secret.includes(String(created.secret).slice(6)),
      'the stored secret is not the plain secret',
    );
    t.equal(
      h.services.secretBox.webhookSecrets.openFor(String(created.id), stored.rows[0]!.sealed_secret),
      created.secret,
      'it opens with the configured key to the secret',
    );
    t.throws(
      () => h.services.secretBox.webhookSecrets.openFor(randomUUID(), stored.rows[0]!.sealed_secret),
      'bound to its endpoint: it opens for no other',
    );
    const events = await h.pool.query<{ data: string }>(
      "SELECT data::text FROM events WHERE type LIKE 'webhook_endpoint.%'",
    );
    t.notOk(
      events.rows.some((e) => e.data.includes(String(created.secret).slice(6))),
      'the event log holds no plain secret',
    );

    const list = await h.request('/v1/webhooks', { key: h.ws.live });
    t.equal(list.status, 200);
    const body = (await list.json()) as { data: Record<string, unknown>[] };
    t.equal(body.data.length, 1);
    t.notOk('secret' in body.data[0]!, 'GET never shows the secret');
    const { secret: _secret, ...shown } = created;
    t.same(body.data[0], shown, 'GET shows the same fields as the 201');
  },
);

t.test('validation of WebhookEndpointCreate', async (t) => {
  const h = await webhookHarness(t);
  const url = h.receiver.url();
  const cases: [string, unknown, string][] = [
    ['unknown property', { url, events: EVENTS, secret: 'x' }, 'secret'],
    ['no events', { url, events: [] }, 'events'],
    ['unknown event kind', { url, events: ['lead.deleted'] }, 'events.0'],
    ['duplicate kinds', { url, events: ['lead.created', 'lead.created'] }, 'events'],
    ['url too long', { url: `${url}/${'a'.repeat(2048)}`, events: EVENTS }, 'url'],
    ['empty url', { url: '', events: EVENTS }, 'url'],
    ['description over 500', { url, events: EVENTS, description: 'd'.repeat(501) }, 'description'],
    ['missing url', { events: EVENTS }, 'url'],
  ];
  for (const [name, json, field] of cases) {
    const response = await h.request('/v1/webhooks', { method: 'POST', key: h.ws.live, json });
    const body = (await response.json()) as { error: string; fields?: Record<string, string> };
    t.equal(response.status, 400, name);
    t.equal(body.error, 'validation_failed', name);
    t.ok(body.fields && field in body.fields, `${name}: fields names ${field} (${JSON.stringify(body.fields)})`);
  }
  // Every kind there is (EVENT_KINDS, not a copy of it): the subscription's limit is the number of kinds.
  const every = await h.request('/v1/webhooks', {
    method: 'POST',
    key: h.ws.live,
    json: { url, description: null, events: [...EVENT_KINDS] },
  });
  t.equal(every.status, 201, `all ${EVENT_KINDS.length} kinds and a null description are accepted`);
  t.same(((await every.json()) as { events: string[] }).events, [...EVENT_KINDS], 'and all are subscribed');
  const twice = await h.request('/v1/webhooks', {
    method: 'POST',
    key: h.ws.live,
    json: { url, events: [...EVENT_KINDS, EVENT_KINDS[0]] },
  });
  t.equal(twice.status, 400, 'every kind and one of them again is refused');
});

t.test('refused addresses at creation', async (t) => {
  // Loopback not allowed here, as in production.
  const h = await webhookHarness(t, { allowLoopback: false });
  h.resolver.table.set('inside.test', ['10.1.2.3']);
  h.resolver.table.set('mixed.test', ['93.184.216.34', '192.168.1.10']);
  h.resolver.table.set('v6inside.test', ['fd00:ec2::254']);
  const refused = [
    'http://93.184.216.34/hook',
    'https://user:pass@93.184.216.34/hook',
    'https://127.0.0.1/hook',
    'https://localhost/hook',
    'https://2130706433/hook',
    'https://0177.0.0.1/hook',
    'https://0x7f.0.0.1/hook',
    'https://[::1]/hook',
    'https://[::ffff:127.0.0.1]/hook',
    'https://[::ffff:a9fe:a9fe]/hook',
    'https://169.254.169.254/latest/meta-data',
    'https://10.0.0.5/hook',
    'https://172.16.3.4/hook',
    'https://192.168.0.1/hook',
    'https://100.64.0.1/hook',
    'https://100.100.100.200/hook',
    'https://224.0.0.1/hook',
    'https://0.0.0.0/hook',
    'https://192.0.0.192/hook',
    'https://[fe80::1]/hook',
    'https://[fc00::1]/hook',
    'https://[64:ff9b::a00:1]/hook',
    'https://[2002:a00:1::1]/hook',
    'https://[ff02::1]/hook',
    'https://inside.test/hook',
    'https://mixed.test/hook',
    'https://v6inside.test/hook',
    'https://does-not-resolve.test/hook',
    'not a url',
  ];
  for (const url of refused) {
    const response = await h.request('/v1/webhooks', { method: 'POST', key: h.ws.live, json: { url, events: EVENTS } });
    const body = (await response.json()) as { error: string; fields?: Record<string, string> };
    t.equal(response.status, 400, `${url} is refused`);
    t.ok(body.error === 'validation_failed' && body.fields?.url, `${url}: ${body.fields?.url}`);
  }
  h.resolver.table.set('public.test', ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946']);
  const ok = await h.request('/v1/webhooks', {
    method: 'POST',
    key: h.ws.live,
    json: { url: 'https://public.test/hook', events: EVENTS },
  });
  t.equal(ok.status, 201, 'a name whose addresses are all public is accepted');
  const literal = await h.request('/v1/webhooks', {
    method: 'POST',
    key: h.ws.live,
    json: { url: 'https://93.184.216.34:8443/hook', events: EVENTS },
  });
  t.equal(literal.status, 201, 'a public IP literal is accepted');
});

t.test('limit, plan, scope, key kind and mode', async (t) => {
  const h = await webhookHarness(t, { definition: { limits: { webhook_endpoints: 2 } } });
  const url = h.receiver.url();
  await h.createEndpoint({ url, events: EVENTS });
  await h.createEndpoint({ url, events: EVENTS });
  const third = await h.request('/v1/webhooks', { method: 'POST', key: h.ws.live, json: { url, events: EVENTS } });
  t.equal(third.status, 409);
  t.equal(((await third.json()) as { error: string }).error, 'webhook_limit');
  const concurrent = await Promise.all(
    Array.from({ length: 4 }, () =>
      h.request('/v1/webhooks', { method: 'POST', key: h.ws.test, json: { url, events: EVENTS } }),
    ),
  );
  t.same(
    concurrent.map((r) => r.status).sort(),
    [201, 201, 409, 409],
    'racing creations never pass the limit; test endpoints count apart from live ones',
  );

  const liveList = (await (await h.request('/v1/webhooks', { key: h.ws.live })).json()) as { data: { id: string }[] };
  const testList = (await (await h.request('/v1/webhooks', { key: h.ws.test })).json()) as { data: { id: string }[] };
  t.equal(liveList.data.length, 2);
  t.equal(testList.data.length, 2);
  t.notOk(
    liveList.data.some((e) => testList.data.some((x) => x.id === e.id)),
    'a test key sees only test endpoints',
  );
  const crossDelete = await h.request(`/v1/webhooks/${liveList.data[0]!.id}`, { method: 'DELETE', key: h.ws.test });
  t.equal(crossDelete.status, 404, 'a test key cannot delete a live endpoint');
  const version = { payload_version: '2026-11-22' };
  const crossPatch = await h.request(`/v1/webhooks/${liveList.data[0]!.id}`, {
    method: 'PATCH',
    key: h.ws.test,
    json: version,
  });
  t.equal(crossPatch.status, 404, "a test key cannot change a live endpoint's payload version");

  const noScope = await h.ws.key({ scopes: ['leads:read'] });
  const scoped = await h.request('/v1/webhooks', { key: noScope.value });
  t.equal(scoped.status, 403);
  t.match(await scoped.json(), { error: 'insufficient_scope', required: 'webhooks:manage' });
  const publicKey = await h.request('/v1/webhooks', {
    key: h.ws.publicLive,
    headers: { origin: 'https://www.example.com' },
  });
  t.equal(publicKey.status, 403, 'a public key is refused');

  const del = await h.request(`/v1/webhooks/${liveList.data[0]!.id}`, { method: 'DELETE', key: h.ws.live });
  t.equal(del.status, 204);
  t.equal(await del.text(), '', '204 has no body');
  const again = await h.request(`/v1/webhooks/${liveList.data[0]!.id}`, { method: 'DELETE', key: h.ws.live });
  t.equal(again.status, 404);
  t.equal(((await again.json()) as { error: string }).error, 'not_found');
  const afterDelete = await h.request('/v1/webhooks', {
    method: 'POST',
    key: h.ws.live,
    json: { url, events: EVENTS },
  });
  t.equal(afterDelete.status, 201, 'a deleted endpoint frees its place under the limit');
  const badId = await h.request('/v1/webhooks/not-a-uuid', { method: 'DELETE', key: h.ws.live });
  t.equal(badId.status, 404, 'an id that is not a uuid names no endpoint');

  const other = await seedWorkspace(h);
  const foreign = await h.request(`/v1/webhooks/${liveList.data[1]!.id}`, { method: 'DELETE', key: other.live });
  t.equal(foreign.status, 404, "another workspace's endpoint is not found");
  const foreignPatch = await h.request(`/v1/webhooks/${liveList.data[1]!.id}`, {
    method: 'PATCH',
    key: other.live,
    json: version,
  });
  t.equal(foreignPatch.status, 404, "another workspace cannot change the endpoint's payload version");
  const unchanged = (await (await h.request('/v1/webhooks', { key: h.ws.live })).json()) as {
    data: { id: string; payload_version: string }[];
  };
  t.notOk(
    unchanged.data.some((e) => e.payload_version === '2026-11-22'),
    'neither refused change reached the endpoints',
  );
});

t.test('403 plan_feature_unavailable on the Starter plan', async (t) => {
  const app = await startApp(t);
  const ws = await seedWorkspace(app, { plan: 'starter' });
  for (const [method, path] of [
    ['GET', '/v1/webhooks'],
    ['POST', '/v1/webhooks'],
    ['DELETE', '/v1/webhooks/5b0c8a52-8d1f-4b7e-9d37-2f1e3c4a5b6c'],
  ] as const) {
    const response = await app.request(path, {
      method,
      key: ws.live,
      json: method === 'POST' ? { url: 'https://93.184.216.34/h', events: EVENTS } : undefined,
    });
    t.equal(response.status, 403, `${method} ${path}`);
    t.equal(((await response.json()) as { error: string }).error, 'plan_feature_unavailable');
  }
});
