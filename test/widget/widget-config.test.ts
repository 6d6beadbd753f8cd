import t from 'tap';
import { revokeKey } from '../../src/keys/repository.js';
import { setWorkspaceStatus } from '../../src/workspaces/repository.js';
import { ALLOWED_ORIGIN, TestClock, demoDefinition, seedWorkspace, startApp } from '../support/app.js';

function configRequest(key: string | undefined, origin: string | undefined, extra: Record<string, string> = {}) {
  const headers: Record<string, string> = { ...extra };
  if (origin !== undefined) headers.origin = origin;
  return { path: `/v1/widget/config${key === undefined ? '' : `?key=${encodeURIComponent(key)}`}`, headers };
}

t.test('GET /v1/widget/config', async (t) => {
  const clock = new TestClock();
  const api = await startApp(t, { now: clock.now });
  const ws = await seedWorkspace(api);
  const definition = demoDefinition();
  const get = async (key: string | undefined, origin: string | undefined, extra: Record<string, string> = {}) => {
    const { path, headers } = configRequest(key, origin, extra);
    const response = await api.request(path, { headers });
    return { response, body: (await response.json()) as Record<string, unknown> };
  };

  await t.test('a live public key from an allowed origin gets the configuration with CORS headers', async (t) => {
    const { response, body } = await get(ws.publicLive, ALLOWED_ORIGIN);
    t.equal(response.status, 200);
    t.same(body, {
      tenant: {
        name: definition.name,
        brand_color: definition.widget.brand_color,
        logo_url: definition.widget.logo_url,
      },
      fields: definition.custom_fields,
      visa_types: definition.visa_types,
      countries: definition.countries,
      captcha: { provider: 'none', site_key: null },
      consent_text: definition.widget.consent_text,
      consent_text_version: definition.widget.consent_text_version,
      test_mode: false,
    });
    t.equal(response.headers.get('access-control-allow-origin'), ALLOWED_ORIGIN);
    t.match(response.headers.get('vary'), /\bOrigin\b/);
    t.match(response.headers.get('access-control-expose-headers'), /RateLimit-Remaining/);
    t.match(response.headers.get('access-control-expose-headers'), /Request-Id/);
    for (const header of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'])
      t.match(response.headers.get(header), /^\d+$/, `${header} is present`);
    t.equal(
      response.headers.get('cache-control'),
      'private, max-age=60',
      'decision: a visitor’s browser may keep it for a minute',
    );
  });

  await t.test('test_mode follows the key', async (t) => {
    const { response, body } = await get(ws.publicTest, ALLOWED_ORIGIN);
    t.equal(response.status, 200);
    t.equal(body.test_mode, true);
  });

  await t.test('an origin the key does not allow gets 403 origin_not_allowed without CORS headers', async (t) => {
    for (const origin of [
      'https://evil.example.net',
      'http://www.example.com',
      'https://www.example.com.evil.net',
      'null',
    ]) {
      const { response, body } = await get(ws.publicLive, origin);
      t.equal(response.status, 403, origin);
      t.equal(body.error, 'origin_not_allowed', origin);
      t.equal(response.headers.get('access-control-allow-origin'), null, `${origin}: no Access-Control-Allow-Origin`);
      t.match(response.headers.get('vary'), /\bOrigin\b/, 'the refusal varies by Origin too');
    }
    const { response, body } = await get(ws.publicLive, undefined);
    t.equal(response.status, 403, 'no Origin header');
    t.equal(body.error, 'origin_not_allowed');
    t.type(body.request_id, 'string');
  });

  await t.test('the origin is compared in its normal form', async (t) => {
    const { response } = await get(ws.publicLive, 'https://WWW.Example.com:443');
    t.equal(response.status, 200);
    t.equal(response.headers.get('access-control-allow-origin'), ALLOWED_ORIGIN);
  });

  await t.test('a secret key gets 403 insufficient_scope with required public_key', async (t) => {
    for (const key of [ws.live, ws.test]) {
      const { response, body } = await get(key, ALLOWED_ORIGIN);
      t.equal(response.status, 403);
      t.equal(body.error, 'insufficient_scope');
      t.equal(body.required, 'public_key');
      t.equal(response.headers.get('access-control-allow-origin'), null);
    }
  });

  await t.test(
    'the key is taken from the query only; missing, unknown, revoked and expired keys get 401',
    async (t) => {
      const viaHeader = await api.request('/v1/widget/config', {
        headers: { origin: ALLOWED_ORIGIN, authorization: `Bearer ${ws.publicLive}` },
      });
      t.equal(viaHeader.status, 401, 'a key in the Authorization header is not read here');
      t.equal(((await viaHeader.json()) as { error: string }).error, 'invalid_api_key');
      const revoked = await ws.key({ kind: 'public' });
      await revokeKey(api.pool, ws.workspace.id, revoked.id);
      const expiring = await ws.key({ kind: 'public', expiresAt: new Date(clock.current.getTime() + 60_000) });
      t.equal(
        (await get(expiring.value, ALLOWED_ORIGIN)).response.status,
        200,
        'the expiring key works before its time',
      );
      clock.advance(61_000);
      for (const [what, key] of [
        ['missing', undefined],
        ['malformed', 'hello'],
        ['unknown', 'key_live_pub_' + 'A'.repeat(32)],
        ['revoked', revoked.value],
        ['expired', expiring.value],
      ] as const) {
        const { response, body } = await get(key, ALLOWED_ORIGIN);
        t.equal(response.status, 401, what);
        t.equal(body.error, 'invalid_api_key', what);
      }
    },
  );

  await t.test('a public key without leads:create cannot be created, so scope holds by construction', async (t) => {
    await t.rejects(ws.key({ kind: 'public', scopes: ['leads:read'] }), /only have the scope leads:create/);
  });

  await t.test('the captcha provider and site key are shown, never its secret', async (t) => {
    const other = await seedWorkspace(api, {
      name: 'Captcha Consultancy',
      widget: {
        ...definition.widget,
        brand_color: null,
        logo_url: 'https://cdn.example.com/logo.png',
        captcha: { provider: 'turnstile', site_key: '0x4AAAAAAA-site', secret: 'never-shown' },
      },
    });
    const { response, body } = await get(other.publicLive, ALLOWED_ORIGIN);
    t.equal(response.status, 200);
    t.same(body.captcha, { provider: 'turnstile', site_key: '0x4AAAAAAA-site' });
    t.same(body.tenant, {
      name: 'Captcha Consultancy',
      brand_color: null,
      logo_url: 'https://cdn.example.com/logo.png',
    });
    t.notOk(JSON.stringify(body).includes('never-shown'));
  });

  await t.test('a suspended workspace gets 402 tenant_suspended', async (t) => {
    const other = await seedWorkspace(api);
    await setWorkspaceStatus(api.pool, other.workspace.id, 'suspended');
    const { response, body } = await get(other.publicLive, ALLOWED_ORIGIN);
    t.equal(response.status, 402);
    t.equal(body.error, 'tenant_suspended');
  });

  await t.test(
    '429 rate_limited once the widget bucket is empty; lead submissions keep their own tokens',
    async (t) => {
      const other = await seedWorkspace(api, {
        limits: {
          rate: {
            widget: { capacity: 2, refill_per_second: 0.001 },
            scopes: { 'leads:create': { capacity: 1, refill_per_second: 0.001 } },
          },
        },
      });
      t.equal((await get(other.publicLive, ALLOWED_ORIGIN)).response.status, 200);
      t.equal((await get(other.publicLive, ALLOWED_ORIGIN)).response.status, 200);
      const { response, body } = await get(other.publicLive, ALLOWED_ORIGIN);
      t.equal(response.status, 429);
      t.equal(body.error, 'rate_limited');
      t.type(body.retry_after, 'number');
      t.equal(body.scope, 'widget');
      t.match(response.headers.get('retry-after'), /^\d+$/);
      const submitted = await api.request('/v1/leads', {
        key: other.publicLive,
        method: 'POST',
        headers: { origin: ALLOWED_ORIGIN },
        json: { full_name: 'After Many Page Views', email: 'views@example.com', consent: true, captcha_token: 'none' },
      });
      t.equal(submitted.status, 201, 'page views did not use up the submission tokens');
    },
  );
});
