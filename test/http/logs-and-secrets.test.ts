import net from 'node:net';
import { pino } from 'pino';
import t from 'tap';
import { ApiError } from '../../src/http/errors.js';
import { loggerOptions } from '../../src/http/logging.js';
import { revokeKey } from '../../src/keys/repository.js';
import { startWorkers } from '../../src/subscribers/index.js';
import { configureWebhookRuntime } from '../../src/webhooks/runtime.js';
import { ALLOWED_ORIGIN, demoDefinition, seedWorkspace, startApp } from '../support/app.js';
import { ADMIN_TOKEN, TestResolver } from '../webhooks/support/harness.js';
import { TestReceiver } from '../webhooks/support/receiver.js';
import { makeTestPki } from '../webhooks/support/tls.js';

/** A pino destination that keeps every line the real loggers write. */
class CapturedLog {
  readonly lines: string[] = [];
  write(line: string): void {
    this.lines.push(line);
  }
  get text(): string {
    return this.lines.join('');
  }
  parsed(): Array<Record<string, unknown>> {
    return this.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  }
}

/** Every character percent-encoded, upper or lower case hex, once or twice. */
const encodeAll = (text: string, lower = false) =>
  [...text]
    .map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')[lower ? 'toLowerCase' : 'toUpperCase']()}`)
    .join('');

/** The forms a secret could take in a log line: itself, its random part, percent-encoded, base64 of it. */
function formsOf(secret: string): string[] {
  const body = secret.replace(/^(key_(live|test)_(pub_)?|whsec_)/, '');
  return [
    secret,
    body,
    encodeURIComponent(secret),
    encodeAll(secret),
    encodeAll(secret, true),
    encodeURIComponent(encodeAll(secret)),
    Buffer.from(secret).toString('base64'),
    Buffer.from(secret).toString('base64url'),
    Buffer.from(`${secret}:`).toString('base64'),
    Buffer.from(body).toString('base64'),
  ];
}

function rawHttp(port: number, request: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('close', () => resolve(answer));
    socket.on('error', () => resolve(answer));
    socket.setTimeout(3000, () => socket.destroy());
  });
}

t.test('no API key, webhook secret, captcha secret or admin token reaches the log in any form', async (t) => {
  const log = new CapturedLog();
  const pki = makeTestPki();
  t.teardown(() => pki.cleanup());
  const receiver = await TestReceiver.start(pki);
  t.teardown(() => receiver.close());
  const api = await startApp(t, {
    config: {
      adminToken: ADMIN_TOKEN,
      webhookAllowLoopback: true,
      // No provider listens here: a public-key capture makes the captcha check fail and log the failure.
      captchaVerifyUrls: {
        turnstile: 'http://127.0.0.1:9/siteverify',
        hcaptcha: 'http://127.0.0.1:9/siteverify',
        recaptcha: 'http://127.0.0.1:9/siteverify',
      },
    },
    logger: loggerOptions('trace', log),
    beforeListen(app) {
      // Requests that fail inside the service with the caller's input in the error: an ApiError echoing it, and an
      // unexpected error (500) whose message and cause carry it.
      app.post('/test/echo-error', { schema: { hide: true } }, async (request) => {
        const input = JSON.stringify(request.body);
        if (request.headers['x-fail'] === 'api') throw new ApiError(400, 'invalid_request', `Bad input ${input}`);
        throw new Error(`Could not handle ${input}`, { cause: new Error(`because of ${input}`) });
      });
    },
  });
  const resolver = new TestResolver();
  configureWebhookRuntime(api.services, { ca: pki.ca, resolve: resolver.resolve });
  const captchaSecret = 'captcha-secret-Zx81Qw7Lm2Np4Rt6';
  const ws = await seedWorkspace(api, {
    limits: {
      rate: {
        key: { capacity: 10_000, refill_per_second: 1000 },
        scopes: {
          'leads:read': { capacity: 10_000, refill_per_second: 1000 },
          'leads:create': { capacity: 10_000, refill_per_second: 1000 },
        },
      },
    },
    widget: {
      ...demoDefinition().widget,
      captcha: { provider: 'turnstile', site_key: '0x4AAAAAAAtestsitekey', secret: captchaSecret },
    },
  });
  const revoked = await ws.key({});
  await revokeKey(api.pool, ws.workspace.id, revoked.id);
  const expired = await ws.key({ expiresAt: new Date(Date.now() - 60_000) });
  const keys = [ws.live, ws.test, ws.publicLive, ws.publicTest, revoked.value, expired.value];

  const created = await api.request('/v1/webhooks', {
    method: 'POST',
    key: ws.live,
    json: { url: receiver.url(), events: ['lead.created'] },
  });
  t.equal(created.status, 201, 'a live endpoint is created');
  const endpoint = (await created.json()) as { id: string; secret: string };
  const testEndpoint = await api.request('/v1/webhooks', {
    method: 'POST',
    key: ws.test,
    json: { url: receiver.url(), events: ['lead.created'] },
  });
  t.equal(testEndpoint.status, 201, 'a test endpoint is created');
  const rotated = await api.request(`/admin/v1/workspaces/${ws.workspace.slug}/webhooks/${endpoint.id}/rotate-secret`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ws.staffToken}` },
  });
  t.equal(rotated.status, 200, 'the secret is rotated');
  const secrets = [
    endpoint.secret,
    ((await testEndpoint.json()) as { secret: string }).secret,
    ((await rotated.json()) as { secret: string }).secret,
  ];
  const everything = [...keys, ...secrets, captchaSecret, ADMIN_TOKEN];

  // The webhook workers log through the same options; deliveries are signed with both current secrets.
  const workers = await startWorkers(api.services, pino(loggerOptions('trace', log)), { pollIntervalMs: 25 });
  t.teardown(() => workers.stop());

  const origin = { origin: ALLOWED_ORIGIN };
  const lead = (extra: Record<string, unknown>) => ({ full_name: 'Logged Person', consent: true, ...extra });
  const statuses = new Map<number, number>();
  const send = async (path: string, init: RequestInit & { json?: unknown; key?: string } = {}) => {
    const response = await api.request(path, init);
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    await response.arrayBuffer();
    return response;
  };

  for (const value of [...keys, ...secrets]) {
    const encoded = encodeAll(value);
    const queries = [
      `key=x&key=${value}`,
      `key=${value}&key=${value}`,
      `%6Bey=${value}`,
      `%6b%65%79=${encoded}`,
      `KEY=${value}`,
      `Key=${encodeURIComponent(value)}`,
      `key[]=${value}`,
      `key%5B%5D=${value}`,
      `api_key=${value}`,
      `${value}=1`,
      `limit=${value}`,
      `cursor=${value}`,
      `cursor=${encoded}`,
      `cursor=${encodeURIComponent(encoded)}`,
      `updated_since=${value}`,
      `key=${Buffer.from(value).toString('base64')}`,
    ];
    for (const query of queries) {
      await send(`/v1/leads?${query}`, { key: ws.live });
      await send(`/v1/widget/config?${query}`, { headers: origin });
    }
    await send(`/widget/demo?key=${value}`);
    for (const path of [value, encoded, encodeURIComponent(encoded), Buffer.from(value).toString('base64url')]) {
      await send(`/v1/leads/${path}`, { key: ws.live });
      await send(`/v1/${path}`);
      await send(`/${path}/leads`, { key: value });
    }
    await send('/v1/leads', { key: value });
    await send('/v1/leads', { headers: { authorization: `bearer ${value}` } });
    await send('/v1/leads', { headers: { AUTHORIZATION: `Basic ${Buffer.from(`${value}:`).toString('base64')}` } });
    await send('/v1/leads', { headers: { authorization: value, 'x-api-key': value, cookie: `key=${value}` } });
    await send('/v1/meta/fields', { headers: { 'X-Api-Key': value, Cookie: `session=${encoded}` } });
    await send('/v1/widget/config?key=' + value, { headers: origin });
    await send('/v1/leads', { key: value, method: 'POST', headers: origin, json: lead({ captcha_token: value }) });
    await send('/v1/leads', { key: ws.live, method: 'POST', json: lead({ message: value, api_key: value }) });
    await send('/v1/leads', { key: ws.live, method: 'POST', json: lead({ full_name: value, email: 'x@' }) });
    await send('/v1/leads', {
      key: ws.live,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"full_name": "${value}", `,
    });
    await send('/v1/leads', {
      key: ws.live,
      method: 'POST',
      headers: { 'content-type': 'application/xml' },
      body: value,
    });
    await send('/v1/webhooks', {
      key: ws.live,
      method: 'POST',
      json: { url: `https://${value}.invalid/`, events: [] },
    });
    await send('/test/echo-error', { method: 'POST', headers: { 'x-fail': 'api' }, json: { value } });
    await send('/test/echo-error', { method: 'POST', json: { value, encoded } });
    // A request Node's parser refuses: its error carries the raw request bytes, Authorization header included.
    const port = Number(new URL(api.baseUrl).port);
    await rawHttp(
      port,
      `GET /v1/leads?key=${value} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${value}\r\nBad Header\r\n\r\n`,
    );
  }
  // A public-key capture with a valid captcha token shape: the provider cannot be reached and the failure is logged.
  await send('/v1/leads', {
    key: ws.publicLive,
    method: 'POST',
    headers: origin,
    json: lead({ captcha_token: 'tok', email: 'captcha@example.com' }),
  });
  // A capture by the live key makes a delivery signed with the current and previous secrets.
  const capture = await send('/v1/leads', {
    key: ws.live,
    method: 'POST',
    json: lead({ email: 'logged@example.com' }),
  });
  t.equal(capture.status, 201);
  // Up to 20 s: the fan-out reads past a transaction only once every older one on the server has ended, and
  // suites running beside this one (in other databases) hold theirs open on purpose.
  for (let i = 0; i < 800 && receiver.requests.length === 0; i++) await new Promise((r) => setTimeout(r, 25));
  t.ok(receiver.requests.length > 0, 'the workers delivered a signed webhook');
  await workers.stop();

  t.ok(statuses.get(200), 'some requests succeeded');
  for (const status of [400, 401, 403, 404, 415, 500, 503])
    t.ok(statuses.get(status), `requests answered ${status} were among them`);

  const lines = log.parsed();
  t.ok(lines.length > 1000, `the real loggers wrote ${lines.length} lines at trace level`);
  t.ok(
    lines.some((l) => l.msg === 'request refused by the HTTP parser' && typeof l.parser_error === 'string'),
    "the parser's refusals were logged (with the parser's code, never the raw bytes)",
  );
  t.ok(
    lines.some((l) => l.msg === 'unhandled error' && JSON.stringify(l.err).includes('Could not handle')),
    'the 500s were logged with their err and cause',
  );
  t.ok(
    lines.some((l) => l.msg === 'captcha provider unavailable'),
    'the captcha failure was logged',
  );
  t.ok(
    lines.some((l) => typeof l.req === 'object' && JSON.stringify(l.req).includes('key=[redacted]&key=[redacted]')),
    'request lines show a redacted key parameter',
  );

  const text = log.text;
  const leaks: string[] = [];
  for (const secret of everything)
    for (const form of secret === captchaSecret || secret === ADMIN_TOKEN ? [secret] : formsOf(secret))
      if (text.includes(form)) leaks.push(`${secret.slice(0, 12)}… as ${form.slice(0, 30)}…`);
  t.same(leaks, [], 'no key, secret or token appears in the log in any form');
});

t.test('PostgreSQL errors reach the log without detail, where, hint or quoted values', async (t) => {
  const log = new CapturedLog();
  let failing = '';
  const api = await startApp(t, {
    logger: loggerOptions('debug', log),
    beforeListen(app, services) {
      app.get('/test/failing-statement', { schema: { hide: true } }, async () => {
        await services.pool.query(failing);
        return { ok: true };
      });
    },
  });
  const phone = '+919876543210';
  const email = 'priya.sharma@example.com';
  await api.pool.query(
    `CREATE TABLE people (id int PRIMARY KEY, phone text UNIQUE, email text CHECK (email NOT LIKE '%@example.com'))`,
  );
  await api.pool.query(
    `CREATE FUNCTION add_person(p text) RETURNS void LANGUAGE plpgsql AS $$
     BEGIN
       INSERT INTO people (id, phone) VALUES (2, p);
     END $$`,
  );
  await api.pool.query(`INSERT INTO people (id, phone) VALUES (1, '${phone}')`);

  const statements = [
    // Unique violation: detail `Key (phone)=(+91…) already exists.`
    `INSERT INTO people (id, phone) VALUES (3, '${phone}')`,
    // The same inside a function: `where` names the function and the statement.
    `SELECT add_person('${phone}')`,
    // Check violation: detail `Failing row contains (…, priya…)`.
    `INSERT INTO people (id, phone, email) VALUES (4, '+911111111111', '${email}')`,
    // The value in the message itself: invalid input syntax for type uuid: "priya…".
    `SELECT '${email}'::uuid`,
    // A raised exception with the values in DETAIL and HINT.
    `DO $$ BEGIN RAISE EXCEPTION 'person rejected' USING DETAIL = 'phone ${phone}', HINT = 'email ${email}'; END $$`,
  ];
  for (const statement of statements) {
    failing = statement;
    const error = await api.pool.query(statement).then(
      () => undefined,
      (e: unknown) => e as Error & Record<string, unknown>,
    );
    t.ok(error, `the statement fails: ${statement.slice(0, 40)}`);
    const carried = JSON.stringify({ ...error, message: error?.message });
    t.ok(carried.includes(phone) || carried.includes(email), 'and the error object itself carries personal data');
    // Through the real logger directly, and through the real app's error handler (a 500).
    api.app.log.error({ err: error }, 'statement failed');
    const response = await api.request('/test/failing-statement');
    t.equal(response.status, 500);
  }

  const text = log.text;
  t.notOk(text.includes(phone), 'no phone number in the log');
  t.notOk(text.includes('9876543210'), 'not even its digits');
  t.notOk(text.includes(email), 'no email address in the log');
  t.notOk(text.includes('priya'), 'not even its local part');
  const errors = log
    .parsed()
    .filter((l) => l.msg === 'statement failed' || l.msg === 'unhandled error')
    .map((l) => l.err as Record<string, unknown>);
  t.equal(errors.length, statements.length * 2, 'every failure was logged twice');
  for (const err of errors) {
    for (const field of ['detail', 'where', 'hint', 'internalQuery', 'query', 'parameters', 'position'])
      t.notOk(field in err, `no ${field}`);
    t.match(err, { type: 'DatabaseError', code: /^[0-9A-Z]{5}$/, severity: 'ERROR', message: String, routine: String });
  }
  t.match(errors[0], { code: '23505', constraint: 'people_phone_key', table: 'people', schema: 'public' });
  t.match(errors[0]!.message, 'duplicate key value violates unique constraint "people_phone_key"');
  t.match(errors[4], { code: '23514', constraint: 'people_email_check', table: 'people' });
  t.match(errors[6], { code: '22P02', message: 'invalid input syntax for type uuid: "[redacted]"' });
  t.match(errors[8], { code: 'P0001', message: 'person rejected' });
});
