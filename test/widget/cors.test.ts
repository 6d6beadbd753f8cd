import t from 'tap';
import { revokeKey } from '../../src/keys/repository.js';
import { ALLOWED_ORIGIN, TestClock, seedWorkspace, startApp } from '../support/app.js';

const preflightHeaders = (
  origin: string | undefined,
  method: string,
  headers = 'authorization,content-type,idempotency-key',
) => {
  const h: Record<string, string> = {
    'access-control-request-method': method,
    'access-control-request-headers': headers,
  };
  if (origin !== undefined) h.origin = origin;
  return h;
};

t.test('CORS for the browser endpoints', async (t) => {
  const clock = new TestClock();
  const api = await startApp(t, { now: clock.now });
  const ws = await seedWorkspace(api);
  const preflight = (path: string, origin: string | undefined, method = 'POST') =>
    api.request(path, { method: 'OPTIONS', headers: preflightHeaders(origin, method) });

  await t.test(
    'a preflight for POST /v1/leads from an allowed origin is answered 204 with the CORS headers',
    async (t) => {
      const response = await preflight('/v1/leads', ALLOWED_ORIGIN);
      t.equal(response.status, 204);
      t.equal(response.headers.get('access-control-allow-origin'), ALLOWED_ORIGIN);
      t.equal(response.headers.get('access-control-allow-methods'), 'POST');
      const allowed = (response.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/,\s*/);
      t.same(allowed.sort(), ['authorization', 'content-type', 'idempotency-key']);
      t.match(response.headers.get('access-control-max-age'), /^\d+$/);
      t.match(response.headers.get('vary'), /\bOrigin\b/);
      t.equal(response.headers.get('access-control-allow-credentials'), null, 'no credentials: keys, not cookies');
      t.equal(await response.text(), '');
    },
  );

  await t.test('a preflight for GET /v1/widget/config is answered with GET allowed', async (t) => {
    const response = await preflight('/v1/widget/config', ALLOWED_ORIGIN, 'GET');
    t.equal(response.status, 204);
    t.equal(response.headers.get('access-control-allow-origin'), ALLOWED_ORIGIN);
    t.equal(response.headers.get('access-control-allow-methods'), 'GET');
  });

  await t.test('an origin allowed only by a test-mode public key passes the preflight', async (t) => {
    const origin = 'https://staging.consultancy.example';
    t.equal((await preflight('/v1/leads', origin)).status, 403, 'refused before any key allows it');
    await ws.key({ kind: 'public', mode: 'test', origins: [origin] });
    const response = await preflight('/v1/leads', origin);
    t.equal(response.status, 204);
    t.equal(response.headers.get('access-control-allow-origin'), origin);
  });

  await t.test('origins of no key, of revoked keys and of expired keys are refused', async (t) => {
    const revokedOrigin = 'https://revoked.example';
    const revoked = await ws.key({ kind: 'public', origins: [revokedOrigin] });
    t.equal((await preflight('/v1/leads', revokedOrigin)).status, 204, 'allowed while the key is active');
    await revokeKey(api.pool, ws.workspace.id, revoked.id);
    const expiringOrigin = 'https://expiring.example';
    await ws.key({ kind: 'public', origins: [expiringOrigin], expiresAt: new Date(clock.current.getTime() + 1000) });
    t.equal((await preflight('/v1/leads', expiringOrigin)).status, 204, 'allowed before the key expires');
    clock.advance(2000);
    for (const origin of ['https://evil.example.net', revokedOrigin, expiringOrigin, 'null', undefined]) {
      const response = await preflight('/v1/leads', origin);
      t.equal(response.status, 403, String(origin));
      t.match(await response.json(), { error: 'origin_not_allowed', request_id: String });
      t.equal(response.headers.get('access-control-allow-origin'), null);
      t.equal(response.headers.get('access-control-allow-methods'), null);
    }
  });

  await t.test('endpoints for secret keys have no preflight, so browsers cannot call them', async (t) => {
    for (const path of [
      '/v1/meta/fields',
      '/v1/webhooks',
      `/v1/leads/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`,
    ]) {
      const response = await preflight(path, ALLOWED_ORIGIN, 'GET');
      t.not(response.status, 204, path);
      t.equal(response.headers.get('access-control-allow-origin'), null, path);
    }
  });

  await t.test(
    'actual answers to a public key from an allowed origin carry the CORS headers, others do not',
    async (t) => {
      const ok = await api.request(`/v1/widget/config?key=${ws.publicTest}`, { headers: { origin: ALLOWED_ORIGIN } });
      t.equal(ok.status, 200);
      t.equal(ok.headers.get('access-control-allow-origin'), ALLOWED_ORIGIN);
      t.same((ok.headers.get('access-control-expose-headers') ?? '').split(/,\s*/).sort(), [
        'RateLimit-Limit',
        'RateLimit-Remaining',
        'RateLimit-Reset',
        'Request-Id',
        'Retry-After',
      ]);
      const refused = await api.request(`/v1/widget/config?key=${ws.publicTest}`, {
        headers: { origin: 'https://evil.example.net' },
      });
      t.equal(refused.status, 403);
      t.equal(refused.headers.get('access-control-allow-origin'), null);
      const secret = await api.request('/v1/meta/fields', { key: ws.live, headers: { origin: ALLOWED_ORIGIN } });
      t.equal(secret.status, 200);
      t.equal(
        secret.headers.get('access-control-allow-origin'),
        null,
        'a secret-key answer is never shared with a browser',
      );
    },
  );

  await t.test('POST /v1/leads from a browser', async (t) => {
    const lead = {
      full_name: 'Riya Sharma',
      email: `riya.${Date.now()}@example.org`,
      consent: true,
      captcha_token: 'unused-with-provider-none',
      website: '',
    };
    const created = await api.request('/v1/leads', {
      method: 'POST',
      key: ws.publicTest,
      json: lead,
      headers: { origin: ALLOWED_ORIGIN },
    });
    t.ok([200, 201].includes(created.status), `created (${created.status})`);
    t.equal(created.headers.get('access-control-allow-origin'), ALLOWED_ORIGIN);
    t.match(created.headers.get('vary'), /\bOrigin\b/);

    const invalid = await api.request('/v1/leads', {
      method: 'POST',
      key: ws.publicTest,
      json: { ...lead, full_name: '' },
      headers: { origin: ALLOWED_ORIGIN },
    });
    t.equal(invalid.status, 400);
    t.equal(
      invalid.headers.get('access-control-allow-origin'),
      ALLOWED_ORIGIN,
      'a validation error is readable, so the form can show it',
    );
    t.match(await invalid.json(), { error: 'validation_failed', fields: { full_name: String } });

    const foreign = await api.request('/v1/leads', {
      method: 'POST',
      key: ws.publicTest,
      json: lead,
      headers: { origin: 'https://evil.example.net' },
    });
    t.equal(foreign.status, 403);
    t.match(await foreign.json(), { error: 'origin_not_allowed' });
    t.equal(foreign.headers.get('access-control-allow-origin'), null);

    const server = await api.request('/v1/leads', {
      method: 'POST',
      key: ws.test,
      json: { ...lead, email: `s.${Date.now()}@example.org` },
      headers: { origin: ALLOWED_ORIGIN },
    });
    t.ok([200, 201].includes(server.status), `a secret key still works (${server.status})`);
    t.equal(server.headers.get('access-control-allow-origin'), null, 'but its answer is not shared with the browser');
  });
});
