import t from 'tap';
import { setWorkspaceStatus } from '../../src/workspaces/repository.js';
import { ALLOWED_ORIGIN, demoDefinition, seedWorkspace, startApp } from '../support/app.js';

t.test('GET /v1/meta/fields', async (t) => {
  const api = await startApp(t);
  const ws = await seedWorkspace(api);
  const definition = demoDefinition();
  const expected = {
    fields: definition.custom_fields,
    visa_types: definition.visa_types,
    countries: definition.countries,
  };

  await t.test('a secret key, live or test, reads the custom fields, visa types and countries', async (t) => {
    for (const key of [ws.live, ws.test]) {
      const response = await api.request('/v1/meta/fields', { key });
      t.equal(response.status, 200);
      t.same(await response.json(), expected);
      for (const header of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'])
        t.match(response.headers.get(header), /^\d+$/, `${header} is present`);
    }
  });

  await t.test('decision: any secret key may read it, whatever its scopes', async (t) => {
    for (const scope of ['leads:create', 'leads:read', 'applications:read', 'webhooks:manage'] as const) {
      const { value } = await ws.key({ scopes: [scope] });
      const response = await api.request('/v1/meta/fields', { key: value });
      t.equal(response.status, 200, `a key with only ${scope}`);
    }
  });

  await t.test('a public key gets 403 insufficient_scope with required secret_key', async (t) => {
    const response = await api.request('/v1/meta/fields', { key: ws.publicLive, headers: { origin: ALLOWED_ORIGIN } });
    t.equal(response.status, 403);
    t.match(await response.json(), { error: 'insufficient_scope', required: 'secret_key' });
    t.equal(response.headers.get('access-control-allow-origin'), null, 'never readable from a browser');
  });

  await t.test('no key or an unknown key gets 401', async (t) => {
    for (const key of [undefined, 'key_live_' + 'B'.repeat(32)]) {
      const response = await api.request('/v1/meta/fields', { key });
      t.equal(response.status, 401);
      t.match(await response.json(), { error: 'invalid_api_key', request_id: String });
    }
  });

  await t.test('the answer follows the workspace definition and stays within the workspace', async (t) => {
    const custom = [
      {
        key: 'passport_number',
        label: 'Passport number',
        type: 'text' as const,
        required: true,
        help_text: 'As printed on the passport',
      },
      { key: 'visit_date', label: 'Preferred visit date', type: 'date' as const, required: false, help_text: null },
    ];
    const other = await seedWorkspace(api, { custom_fields: custom, visa_types: ['work', 'pr'], countries: ['CA'] });
    const response = await api.request('/v1/meta/fields', { key: other.live });
    t.same(await response.json(), { fields: custom, visa_types: ['work', 'pr'], countries: ['CA'] });
    t.same(
      await (await api.request('/v1/meta/fields', { key: ws.live })).json(),
      expected,
      'the first workspace still sees its own',
    );
  });

  await t.test('a suspended workspace gets 402', async (t) => {
    const other = await seedWorkspace(api);
    await setWorkspaceStatus(api.pool, other.workspace.id, 'suspended');
    const response = await api.request('/v1/meta/fields', { key: other.live });
    t.equal(response.status, 402);
    t.match(await response.json(), { error: 'tenant_suspended' });
  });

  await t.test('429 rate_limited once the key bucket is empty', async (t) => {
    const other = await seedWorkspace(api, { limits: { rate: { key: { capacity: 1, refill_per_second: 0.001 } } } });
    t.equal((await api.request('/v1/meta/fields', { key: other.live })).status, 200);
    const response = await api.request('/v1/meta/fields', { key: other.live });
    t.equal(response.status, 429);
    t.match(await response.json(), { error: 'rate_limited', scope: 'key', retry_after: Number });
  });
});
