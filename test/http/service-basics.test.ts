import http from 'node:http';
import { Writable } from 'node:stream';
import t from 'tap';
import { createServices } from '../../src/bootstrap.js';
import { buildApp, loggerOptions } from '../../src/http/app.js';
import { ALLOWED_ORIGIN, seedWorkspace, startApp } from '../support/app.js';

t.test('OpenAPI document, docs page, health and readiness', async (t) => {
  const api = await startApp(t);
  const openapi = (await (await api.request('/openapi.json')).json()) as {
    openapi: string;
    paths: Record<string, Record<string, unknown>>;
  };
  t.equal(openapi.openapi, '3.1.0');
  for (const [path, method] of [
    ['/v1/leads', 'post'],
    ['/v1/leads', 'get'],
    ['/v1/leads/{id}', 'get'],
    ['/v1/leads/{id}', 'patch'],
    ['/v1/applications/{id}/status', 'get'],
    ['/v1/webhooks', 'get'],
    ['/v1/webhooks', 'post'],
    ['/v1/webhooks/{id}', 'delete'],
    ['/v1/widget/config', 'get'],
    ['/v1/meta/fields', 'get'],
  ] as const) {
    t.ok(openapi.paths[path]?.[method], `OpenAPI describes ${method.toUpperCase()} ${path}`);
  }
  const create = openapi.paths['/v1/leads']!.post as {
    requestBody: {
      content: Record<string, { schema: { properties: Record<string, unknown>; additionalProperties: boolean } }>;
    };
  };
  const schema = create.requestBody.content['application/json']!.schema;
  t.equal(schema.additionalProperties, false, 'LeadCreate refuses unknown properties in the document too');
  t.ok(schema.properties.full_name && schema.properties.consent, 'generated from the same schemas that validate');

  const docs = await api.request('/docs/');
  t.equal(docs.status, 200);
  t.match(await docs.text(), /<html/i, 'a readable docs page');
  t.same(await (await api.request('/healthz')).json(), { status: 'ok' });
  t.same(await (await api.request('/readyz')).json(), { status: 'ready' });
});

t.test('logs carry request id, tenant and key id, never a full key or secret', async (t) => {
  const api = await startApp(t);
  const ws = await seedWorkspace(api);
  const lines: string[] = [];
  const stream = new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString()), done()) });
  const services = await createServices(api.services.config, {
    pool: api.pool,
    url: '',
    kind: 'external',
    close: async () => undefined,
  });
  const app = await buildApp(services, { logger: { ...(loggerOptions('info') as object), stream } });
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());

  await fetch(`${base}/v1/leads`, { headers: { authorization: `Bearer ${ws.live}` } });
  await fetch(`${base}/v1/widget/config?key=${ws.publicLive}`, { headers: { origin: ALLOWED_ORIGIN } });
  const webhook = await fetch(`${base}/v1/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ws.live}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: 'https://93.184.216.34/in', events: ['lead.created'] }),
  });
  t.equal(webhook.status, 201, 'a webhook endpoint was created');
  const { secret } = (await webhook.json()) as { secret: string };
  await app.close();

  const log = lines.join('');
  t.ok(lines.length > 0, 'something was logged');
  for (const value of [ws.live, ws.publicLive, secret])
    t.notOk(log.includes(value), `the log never holds ${value.slice(0, 12)}…`);
  const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  t.ok(
    entries.some((e) => typeof e.reqId === 'string' && String(e.reqId).startsWith('req_')),
    'request ids are logged',
  );
  t.ok(
    entries.some((e) => e.tenant_id === ws.workspace.id && typeof e.key_id === 'string'),
    'tenant and key id are logged',
  );
});

t.test('graceful shutdown finishes the requests in flight', async (t) => {
  // A captcha provider that answers slowly keeps a lead creation in flight while the service closes.
  let release: () => void = () => undefined;
  const arrived = new Promise<void>((resolve) => {
    const provider = http.createServer((req, res) => {
      resolve();
      release = () =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ success: true, hostname: 'www.example.com' }));
    });
    provider.listen(0, '127.0.0.1', () => {
      const port = (provider.address() as { port: number }).port;
      (globalThis as { providerUrl?: string }).providerUrl = `http://127.0.0.1:${port}/siteverify`;
    });
    t.teardown(() => provider.close());
  });
  await new Promise((r) => setTimeout(r, 50));
  const providerUrl = (globalThis as { providerUrl?: string }).providerUrl!;
  const api = await startApp(t, {
    config: { captchaVerifyUrls: { turnstile: providerUrl, hcaptcha: providerUrl, recaptcha: providerUrl } },
  });
  const base = await seedWorkspace(api);
  const ws = await seedWorkspace(api, {
    widget: {
      ...base.workspace.settings.widget,
      captcha: { provider: 'turnstile', site_key: '0x4AAAA', secret: 'provider-secret' },
    },
  });
  const inFlight = api.request('/v1/leads', {
    key: ws.publicLive,
    method: 'POST',
    headers: { origin: ALLOWED_ORIGIN },
    json: { full_name: 'Slow Submit', email: 'slow@example.com', consent: true, captcha_token: 'token' },
  });
  await arrived;
  const closing = api.app.close();
  await new Promise((r) => setTimeout(r, 100));
  await t.rejects(fetch(`${api.baseUrl}/healthz`), 'new connections are refused while closing');
  release();
  const response = await inFlight;
  t.equal(response.status, 201, 'the request in flight completed');
  await closing;
});

t.test('a request arriving while the service closes gets 503 with the Error body', async (t) => {
  const api = await startApp(t);
  const ws = await seedWorkspace(api);
  const services = await createServices(api.services.config, {
    pool: api.pool,
    url: '',
    kind: 'external',
    close: async () => undefined,
  });
  const app = await buildApp(services, { logger: false });
  // Holds the close between its start and the closing of idle connections, where a request can still arrive on a
  // kept-alive connection.
  let letClose: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (letClose = resolve));
  app.addHook('preClose', async () => held);
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(async () => {
    letClose();
    await app.close();
  });

  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const get = (path: string) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
      const req = http.get(`${base}${path}`, { agent, headers: { authorization: `Bearer ${ws.live}` } }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
    });
  t.equal((await get('/v1/leads')).status, 200, 'the kept-alive connection is open');
  const closing = app.close();
  await new Promise((r) => setTimeout(r, 50));
  const late = await get('/v1/leads');
  t.equal(late.status, 503);
  const body = JSON.parse(late.body) as Record<string, unknown>;
  t.same(Object.keys(body).sort(), ['error', 'message', 'request_id'], 'the Error body');
  t.equal(body.error, 'shutting_down');
  t.equal(body.request_id, late.headers['request-id']);
  t.equal(late.headers['retry-after'], '1');
  t.equal(late.headers.connection, 'close', 'the connection is not kept');
  letClose();
  await closing;
});
