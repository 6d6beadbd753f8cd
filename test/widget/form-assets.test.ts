import vm from 'node:vm';
import t from 'tap';
import { LeadCreate } from '../../src/schemas/lead.js';
import { clientRules } from '../../src/widget/rules.js';
import { startApp } from '../support/app.js';

t.test('the form script', async (t) => {
  const api = await startApp(t);

  await t.test('is served as JavaScript with caching, an ETag and a cross-origin resource policy', async (t) => {
    const response = await api.request('/widget/v1/form.js');
    t.equal(response.status, 200);
    t.match(response.headers.get('content-type'), /^text\/javascript/);
    t.match(response.headers.get('cache-control'), /public, max-age=\d+/);
    t.equal(response.headers.get('cross-origin-resource-policy'), 'cross-origin');
    const etag = response.headers.get('etag');
    t.ok(etag);
    const source = await response.text();
    t.doesNotThrow(() => new vm.Script(source), 'it parses as a script');
    t.notOk(source.includes('{/* rules */}'), 'the rules slot is filled');
    const again = await api.request('/widget/v1/form.js', { headers: { 'if-none-match': etag! } });
    t.equal(again.status, 304, 'a cached copy is revalidated');
  });

  await t.test("carries the server's LeadCreate limits", async (t) => {
    const source = await (await api.request('/widget/v1/form.js')).text();
    const match = /var RULES = (\{.*\});/.exec(source);
    t.ok(match, 'the rules are written into the script');
    const rules = JSON.parse(match![1]!) as ReturnType<typeof clientRules>;
    t.same(rules, clientRules(LeadCreate), 'exactly the rules read from the schema');
    t.match(rules.fields.full_name, { minLength: 1, maxLength: 120 });
    t.match(rules.fields.phone, { maxLength: 32 });
    t.match(rules.fields.message, { maxLength: 2000 });
    t.match(rules.fields.landing_page_url, { maxLength: 2000 });
    t.equal(rules.utmMaxLength, 200);
    const intake = new RegExp(rules.fields.intake!.pattern!, 'u');
    t.ok(intake.test('2027-09'));
    t.notOk(intake.test('2027-13'));
    t.notOk(intake.test('2027-9'));
  });

  await t.test('is listed nowhere in the OpenAPI document', async (t) => {
    const doc = (await (await api.request('/openapi.json')).json()) as { paths: Record<string, unknown> };
    t.notOk(Object.keys(doc.paths).some((p) => p.startsWith('/widget')));
    t.ok(doc.paths['/v1/widget/config'], 'the configuration endpoint is');
    t.ok(doc.paths['/v1/meta/fields'], 'and so is the metadata endpoint');
  });
});

t.test('the demo page', async (t) => {
  await t.test('is served when SERVE_DEMO is on, embedding the form with the given public key', async (t) => {
    const api = await startApp(t, { config: { serveDemo: true } });
    const key = 'key_test_pub_' + 'x'.repeat(32);
    const response = await api.request(`/widget/demo?key=${key}`);
    t.equal(response.status, 200);
    t.match(response.headers.get('content-type'), /^text\/html/);
    const html = await response.text();
    const port = new URL(api.baseUrl).port;
    t.match(
      html,
      `<script src="http://localhost:${port}/widget/v1/form.js" data-key="${key}"`,
      'from the other loopback name, so its calls carry an Origin',
    );
    const viaLocalhost = await (await fetch(`http://localhost:${port}/widget/demo?key=${key}`)).text();
    t.match(viaLocalhost, `<script src="http://127.0.0.1:${port}/widget/v1/form.js"`);
    const otherHost = (await api.app.inject({ url: `/widget/demo?key=${key}`, headers: { host: 'crm.example.com' } }))
      .body;
    t.match(otherHost, `<script src="/widget/v1/form.js"`, 'any other host loads it from its own origin');
  });

  await t.test('writes nothing but a well-formed public key into the page', async (t) => {
    const api = await startApp(t, { config: { serveDemo: true } });
    for (const key of ['"><script>alert(1)</script>', 'key_live_' + 'y'.repeat(32), '']) {
      const html = await (await api.request(`/widget/demo?key=${encodeURIComponent(key)}`)).text();
      t.notMatch(html, /data-key=/, JSON.stringify(key));
      t.notOk(html.includes('<script>alert'), 'nothing is reflected');
      t.match(html, /A public key is needed/);
    }
  });

  await t.test('is absent when SERVE_DEMO is off (production)', async (t) => {
    const api = await startApp(t, { config: { serveDemo: false } });
    const response = await api.request('/widget/demo');
    t.equal(response.status, 404);
    t.equal((await api.request('/widget/v1/form.js')).status, 200, 'the form script itself is always served');
  });
});
