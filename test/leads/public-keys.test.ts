import { readFileSync } from 'node:fs';
import t from 'tap';
import { ALLOWED_ORIGIN, fakeCaptcha, leadBody, leadsFixture } from './helpers.js';
import type { WorkspaceDefinition } from '../../src/workspaces/definition.js';

const demo = JSON.parse(
  readFileSync(new URL('../../definitions/demo-workspace.json', import.meta.url), 'utf8'),
) as WorkspaceDefinition;
const withCaptcha = (provider: 'turnstile' | 'hcaptcha' | 'recaptcha') => ({
  widget: { ...demo.widget, captcha: { provider, site_key: 'site-key-1', secret: 'captcha-secret-1' } },
});
const origin = { origin: ALLOWED_ORIGIN };

for (const provider of ['turnstile', 'hcaptcha', 'recaptcha'] as const) {
  t.test(`public keys: ${provider} token verified against the provider`, async (t) => {
    const captcha = await fakeCaptcha(t);
    const f = await leadsFixture(t, {
      config: { captchaVerifyUrls: { turnstile: captcha.url, hcaptcha: captcha.url, recaptcha: captcha.url } },
      definition: withCaptcha(provider),
    });

    const missing = await f.post(leadBody(), { key: f.publicLive, headers: origin });
    t.equal(missing.status, 400);
    t.match(missing.body, { error: 'validation_failed', fields: { captcha_token: 'is required with a public key' } });
    t.equal(captcha.requests.length, 0, 'no provider call without a token');

    const good = await f.post(leadBody({ captcha_token: 'ok-token-1' }), { key: f.publicLive, headers: origin });
    t.equal(good.status, 201);
    t.equal(captcha.requests.length, 1);
    t.match(captcha.requests[0], { secret: 'captcha-secret-1', response: 'ok-token-1', remoteip: '127.0.0.1' });
    if (provider === 'hcaptcha') t.equal(captcha.requests[0]!.sitekey, 'site-key-1', 'hCaptcha gets the site key');
    const lead = await f.get(`/v1/leads/${good.body.id}`);
    t.match(lead.body.source, { key: 'web_form', name: 'Website form' }, 'public keys default to the web_form source');
    t.match(
      lead.body.consent,
      { source: 'web_form@2026-01' },
      'consent records the consent text version shown by the form',
    );

    const bad = await f.post(leadBody({ captcha_token: 'bad-token' }), { key: f.publicLive, headers: origin });
    t.equal(bad.status, 400);
    t.equal(bad.body.error, 'captcha_failed');

    captcha.answer = () => ({ body: { success: true, hostname: 'evil.example' } });
    const elsewhere = await f.post(leadBody({ captcha_token: 'ok-2' }), { key: f.publicLive, headers: origin });
    t.equal(elsewhere.body.error, 'captcha_failed', 'a token solved on another site is refused');

    if (provider === 'recaptcha') {
      captcha.answer = () => ({ body: { success: true, hostname: 'www.example.com', score: 0.2 } });
      t.equal(
        (await f.post(leadBody({ captcha_token: 'ok-3' }), { key: f.publicLive, headers: origin })).body.error,
        'captcha_failed',
        'a low reCAPTCHA v3 score is refused',
      );
    }

    captcha.answer = () => ({ status: 500, body: 'oops' });
    const down = await f.post(leadBody({ captcha_token: 'ok-4' }), { key: f.publicLive, headers: origin });
    t.equal(down.status, 503);
    t.equal(down.body.error, 'captcha_unavailable');
    t.equal(down.headers.get('retry-after'), '5');

    const count = await f.pool.query('SELECT count(*)::int AS n FROM leads');
    t.equal(count.rows[0].n, 1, 'only the verified submission made a lead');
  });
}

t.test('public keys: origin checked; test public keys write to the sandbox; secret keys need no token', async (t) => {
  const captcha = await fakeCaptcha(t);
  const f = await leadsFixture(t, {
    config: { captchaVerifyUrls: { turnstile: captcha.url, hcaptcha: captcha.url, recaptcha: captcha.url } },
    definition: withCaptcha('turnstile'),
  });
  const wrongOrigin = await f.post(leadBody({ captcha_token: 'ok' }), {
    key: f.publicLive,
    headers: { origin: 'https://evil.example' },
  });
  t.equal(wrongOrigin.status, 403);
  t.equal(wrongOrigin.body.error, 'origin_not_allowed');
  const noOrigin = await f.post(leadBody({ captcha_token: 'ok' }), { key: f.publicLive });
  t.equal(noOrigin.body.error, 'origin_not_allowed');

  const sandbox = await f.post(leadBody({ captcha_token: 'ok' }), { key: f.publicTest, headers: origin });
  t.equal(sandbox.status, 201);
  t.equal(sandbox.body.test_mode, true);
  t.equal((await f.get(`/v1/leads/${sandbox.body.id}`, f.test)).status, 200);

  t.equal((await f.post(leadBody())).status, 201, 'a secret key sends no captcha token');
  t.equal(captcha.requests.length, 1);

  const readWithPublic = await f.get('/v1/leads', f.publicLive);
  t.equal(readWithPublic.status, 403, 'public keys cannot list leads');
});

t.test('public keys on a workspace without a captcha provider still send a token, which is not verified', async (t) => {
  const f = await leadsFixture(t);
  t.equal((await f.post(leadBody(), { key: f.publicLive, headers: origin })).body.error, 'validation_failed');
  t.equal((await f.post(leadBody({ captcha_token: 'anything' }), { key: f.publicLive, headers: origin })).status, 201);
});

t.test('a provider configured without a secret answers 503', async (t) => {
  const f = await leadsFixture(t, {
    definition: { widget: { ...demo.widget, captcha: { provider: 'turnstile', site_key: 'k', secret: null } } },
  });
  const res = await f.post(leadBody({ captcha_token: 'ok' }), { key: f.publicLive, headers: origin });
  t.equal(res.status, 503);
  t.equal(res.body.error, 'captcha_unavailable');
});
