import t from 'tap';
import { revokeKey } from '../../src/keys/repository.js';
import { setWorkspaceStatus } from '../../src/workspaces/repository.js';
import { ALLOWED_ORIGIN, seedWorkspace, startApp } from '../support/app.js';

const lead = (name = 'Auth Check') => ({
  full_name: name,
  email: `${name.replace(/\W/g, '').toLowerCase()}@example.com`,
  consent: true,
});

t.test('every authentication failure answers as the spec says', async (t) => {
  const api = await startApp(t);
  const ws = await seedWorkspace(api);

  const expectError = async (
    response: Response,
    status: number,
    error: string,
    extra: Record<string, unknown> = {},
  ) => {
    const body = (await response.json()) as Record<string, unknown>;
    t.equal(response.status, status, `${error}: status ${status}`);
    t.match(
      body,
      { error, message: String, request_id: response.headers.get('request-id'), ...extra },
      `${error}: Error body with request_id`,
    );
    return body;
  };

  await expectError(await api.request('/v1/leads'), 401, 'invalid_api_key');
  await expectError(
    await api.request('/v1/leads', { headers: { authorization: `Basic ${ws.live}` } }),
    401,
    'invalid_api_key',
  );
  await expectError(await api.request('/v1/leads', { key: 'key_live_' + 'x'.repeat(32) }), 401, 'invalid_api_key');
  await expectError(await api.request('/v1/leads', { key: 'sk_live_whatever' }), 401, 'invalid_api_key');

  const revoked = await ws.key({});
  await revokeKey(api.pool, ws.workspace.id, revoked.id);
  await expectError(await api.request('/v1/leads', { key: revoked.value }), 401, 'invalid_api_key');

  const expired = await ws.key({ expiresAt: new Date(Date.now() - 1000) });
  await expectError(await api.request('/v1/leads', { key: expired.value }), 401, 'invalid_api_key');
  const notYetExpired = await ws.key({ expiresAt: new Date(Date.now() + 3_600_000) });
  t.equal((await api.request('/v1/leads', { key: notYetExpired.value })).status, 200, 'a key before its expiry works');

  const readOnly = await ws.key({ scopes: ['leads:read'] });
  await expectError(
    await api.request('/v1/leads', { key: readOnly.value, method: 'POST', json: lead() }),
    403,
    'insufficient_scope',
    { required: 'leads:create' },
  );
  await expectError(
    await api.request('/v1/applications/00000000-0000-4000-8000-000000000000/status', { key: readOnly.value }),
    403,
    'insufficient_scope',
    { required: 'applications:read' },
  );
  await expectError(
    await api.request('/v1/leads', { key: ws.publicLive, headers: { origin: ALLOWED_ORIGIN } }),
    403,
    'insufficient_scope',
    { required: 'secret_key' },
  );
  await expectError(
    await api.request(`/v1/widget/config?key=${ws.live}`, { headers: { origin: ALLOWED_ORIGIN } }),
    403,
    'insufficient_scope',
    { required: 'public_key' },
  );

  await expectError(
    await api.request('/v1/leads', {
      key: ws.publicLive,
      method: 'POST',
      json: { ...lead(), captcha_token: 'x' },
      headers: { origin: 'https://evil.example' },
    }),
    403,
    'origin_not_allowed',
  );
  await expectError(
    await api.request('/v1/leads', { key: ws.publicLive, method: 'POST', json: { ...lead(), captcha_token: 'x' } }),
    403,
    'origin_not_allowed',
  );

  const fenced = await ws.key({ ips: ['10.0.0.0/8', '2001:db8::/32'] });
  await expectError(await api.request('/v1/leads', { key: fenced.value }), 403, 'ip_not_allowed');
  const loopbackOnly = await ws.key({ ips: ['127.0.0.0/8'] });
  t.equal((await api.request('/v1/leads', { key: loopbackOnly.value })).status, 200, 'an allowed IP range passes');

  const starter = await seedWorkspace(api, { plan: 'starter' });
  await expectError(await api.request('/v1/webhooks', { key: starter.live }), 403, 'plan_feature_unavailable');
  t.equal((await api.request('/v1/webhooks', { key: ws.live })).status, 200, 'the Growth plan manages webhooks');

  await setWorkspaceStatus(api.pool, ws.workspace.id, 'suspended');
  await expectError(await api.request('/v1/leads', { key: ws.live }), 402, 'tenant_suspended');
  await expectError(
    await api.request(`/v1/widget/config?key=${ws.publicLive}`, { headers: { origin: ALLOWED_ORIGIN } }),
    402,
    'tenant_suspended',
  );
  await setWorkspaceStatus(api.pool, ws.workspace.id, 'active');
  t.equal((await api.request('/v1/leads', { key: ws.live })).status, 200, 'reactivated, the key works again');
});

t.test('test keys see and write only the sandbox; live keys only live data', async (t) => {
  const api = await startApp(t);
  const ws = await seedWorkspace(api);
  const other = await seedWorkspace(api);
  const created = await api.request('/v1/leads', { key: ws.test, method: 'POST', json: lead('Sandbox Person') });
  t.equal(created.status, 201);
  const body = (await created.json()) as { id: string; test_mode?: boolean };
  t.equal(body.test_mode, true, 'a test key answers test_mode: true');

  t.equal(
    (await api.request(`/v1/leads/${body.id}`, { key: ws.test })).status,
    200,
    'the test key reads its sandbox lead',
  );
  t.equal((await api.request(`/v1/leads/${body.id}`, { key: ws.live })).status, 404, 'the live key does not see it');
  t.equal(
    (await api.request(`/v1/leads/${body.id}`, { key: other.test })).status,
    404,
    "another workspace's test key does not see it",
  );
  const liveList = (await (await api.request('/v1/leads', { key: ws.live })).json()) as { data: unknown[] };
  t.equal(liveList.data.length, 0, 'live listing is empty');

  const live = await api.request('/v1/leads', { key: ws.live, method: 'POST', json: lead('Sandbox Person') });
  t.equal(live.status, 201, 'the same person is new in live data: duplicates are per mode');
});
