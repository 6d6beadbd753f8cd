import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import t, { type Test } from 'tap';
import { seedWorkspace, startApp } from '../support/app.js';
import { spawnCli } from '../support/cli.js';
import { leadBody } from '../leads/helpers.js';
import { makeTestPki } from '../webhooks/support/tls.js';

// `visa-crm listen` follows the Events API and forwards each event to a local receiver, signed as deliveries are:
// every event created while it runs arrives once, in order, and verifies with the Standard Webhooks library and with
// Stripe's constructEvent, across an outage of the service's address, an outage of the receiver (retried with
// backoff, nothing lost, counted honestly) and a restart with --replay-since, signed with the same secret each run.

// Each run of the built CLI costs a few seconds of CPU on a loaded machine; the refusals alone start it 24 times.
t.setTimeout(420_000);

/** A configuration folder of the test's own, where the CLI keeps its signing secrets. */
function configDir(t: Test): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vcrm-listen-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface Received {
  id: string;
  sequence: string;
  previous: string | undefined;
}

async function listenOn(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** A receiver that checks both signatures with the real libraries; a request that fails either is counted as refused. */
function verifyingReceiver(secretOf: () => string) {
  const received: Received[] = [];
  const refused: string[] = [];
  const stripe = new Stripe('sk_test_unused_no_network');
  const server = createServer((request, response) => {
    void readBody(request).then((body) => {
      const secret = secretOf();
      try {
        new Webhook(secret).verify(body, {
          'webhook-id': String(request.headers['webhook-id']),
          'webhook-timestamp': String(request.headers['webhook-timestamp']),
          'webhook-signature': String(request.headers['webhook-signature']),
        });
        const event = stripe.webhooks.constructEvent(body, String(request.headers['x-service-signature']), secret);
        received.push({
          id: (event as unknown as { id: string }).id,
          sequence: String(request.headers['x-service-sequence']),
          previous: request.headers['x-service-previous-event'] as string | undefined,
        });
        response.writeHead(200).end('ok');
      } catch (error) {
        refused.push((error as Error).message);
        response.writeHead(400).end('bad signature');
      }
    });
  });
  return { server, received, refused };
}

/** A proxy in front of the service that can go down (connections refused) and come back on the same port. */
function switchableProxy(target: URL) {
  let down = false;
  const server = createServer((request, response) => {
    if (down) return request.socket.destroy();
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, path: request.url, method: request.method, headers: request.headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on('error', () => response.destroy());
    request.pipe(upstream);
  });
  return {
    server,
    setDown(value: boolean) {
      down = value;
    },
  };
}

function linesOf(child: ReturnType<typeof spawnCli>): { lines: string[]; waitFor: (re: RegExp) => Promise<string> } {
  const lines: string[] = [];
  const waiters: { re: RegExp; resolve: (line: string) => void }[] = [];
  let pending = '';
  child.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    for (const line of parts) {
      lines.push(line);
      for (const w of [...waiters]) {
        if (!w.re.test(line)) continue;
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  return {
    lines,
    waitFor: (re) => {
      const found = lines.find((l) => re.test(l));
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no line matching ${re} in:\n${lines.join('\n')}`)), 30_000);
        waiters.push({ re, resolve: (line) => (clearTimeout(timer), resolve(line)) });
      });
    },
  };
}

async function until(check: () => boolean, message: string | (() => string)): Promise<void> {
  const end = Date.now() + 30_000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`Timed out: ${typeof message === 'string' ? message : message()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

t.test('forwards every event once, in order, verified, across an outage and a restart', async (t) => {
  const app = await startApp(t);
  const ws = await seedWorkspace(app);
  const proxy = switchableProxy(new URL(app.baseUrl));
  const proxyPort = await listenOn(proxy.server);
  t.teardown(() => proxy.server.close());
  let secret = '';
  const receiver = verifyingReceiver(() => secret);
  const receiverPort = await listenOn(receiver.server);
  t.teardown(() => receiver.server.close());
  const createLead = async () => {
    const response = await app.request('/v1/leads', { method: 'POST', key: ws.test, json: leadBody() });
    t.equal(response.status, 201);
  };
  // An event from before the listener starts is not forwarded without --replay-since.
  await createLead();

  const args = [
    'listen',
    '--forward-to',
    `http://127.0.0.1:${receiverPort}/hooks`,
    '--api-url',
    `http://127.0.0.1:${proxyPort}`,
    '--poll-interval',
    '50',
  ];
  const env = { VISA_CRM_API_KEY: ws.test, VISA_CRM_CONFIG_DIR: configDir(t) };
  const first = spawnCli('postgres://unused', args, env);
  const out = linesOf(first);
  let stderr = '';
  first.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  t.teardown(() => {
    if (first.exitCode === null) first.kill();
  });
  secret = /: (whsec_[A-Za-z0-9]{32}) /.exec(await out.waitFor(/Signing secret/))![1]!;

  for (let i = 0; i < 4; i++) await createLead();
  await until(
    () => receiver.received.length === 4,
    () =>
      `four events forwarded; received ${receiver.received.length}, refused ${receiver.refused.join('; ')}, out:\n${out.lines.join('\n')}\n${stderr}`,
  );
  proxy.setDown(true);
  await out.waitFor(/Cannot reach/);
  for (let i = 0; i < 3; i++) await createLead();
  proxy.setDown(false);
  await until(() => receiver.received.length === 7, 'the three created during the outage arrive after it');

  first.kill('SIGINT');
  const [code] = (await once(first, 'exit')) as [number];
  t.equal(code, 0, 'Ctrl-C ends it cleanly');
  t.match(out.lines.at(-1), /Stopped after forwarding 7 events; none pending\./);
  t.equal(out.lines.filter((l) => /lead\.created .* \[200\]/.test(l)).length, 7, 'one line per event with its status');

  const listed = (await (await app.request('/v1/events?order=asc&limit=100', { key: ws.test })).json()) as {
    data: { id: string }[];
  };
  const created = listed.data.map((e) => e.id);
  t.same(
    receiver.received.map((r) => r.id),
    created.slice(1),
    'every event created during the run, once, in order',
  );
  t.same(
    receiver.received.map((r) => r.sequence),
    ['1', '2', '3', '4', '5', '6', '7'],
    'numbered as deliveries are',
  );
  t.same(
    receiver.received.map((r) => r.previous),
    [undefined, ...created.slice(1, 7)],
    'each names the event before it',
  );
  t.same(receiver.refused, [], 'every request verified with both libraries');

  // A second run with --replay-since sends what happened since then first, signed with the same secret: the receiver
  // keeps its configuration.
  receiver.received.length = 0;
  const since = new Date(Date.now() - 60 * 60_000).toISOString();
  const second = spawnCli('postgres://unused', [...args, '--replay-since', since, '--events', 'lead.*'], env);
  const out2 = linesOf(second);
  const kept = await out2.waitFor(/Signing secret/);
  t.equal(/: (whsec_[A-Za-z0-9]{32}) /.exec(kept)![1], secret, 'the same secret as the first run');
  t.match(kept, /\(kept in .*listen-secrets\.json/);
  await until(() => receiver.received.length === 8, 'the replay sends all eight');
  t.same(
    receiver.received.map((r) => r.id),
    created,
    'replayed oldest first',
  );
  second.kill('SIGINT');
  await once(second, 'exit');
  t.same(receiver.refused, []);
});

/**
 * An HTTPS receiver on loopback (the test CA's certificate, trusted by the CLI through NODE_EXTRA_CA_CERTS) that
 * verifies both signatures, can be taken down (its port closed: connections refused) and brought back on the same
 * port, and can answer 503 to the next requests.
 */
async function outageReceiver(t: Test, secretOf: () => string) {
  const pki = makeTestPki();
  t.teardown(() => pki.cleanup());
  const accepted: { id: string; sequence: string; previous: string | undefined; delivery: string }[] = [];
  const attempts: { id: string; delivery: string; status: number }[] = [];
  const refused: string[] = [];
  let failNext = 0;
  const server = createHttpsServer({ key: pki.key, cert: pki.cert }, (request, response) => {
    void readBody(request).then((body) => {
      const id = String(request.headers['webhook-id']);
      const delivery = String(request.headers['x-service-delivery']);
      if (failNext > 0) {
        failNext -= 1;
        attempts.push({ id, delivery, status: 503 });
        return response.writeHead(503).end('busy');
      }
      try {
        new Webhook(secretOf()).verify(body, {
          'webhook-id': id,
          'webhook-timestamp': String(request.headers['webhook-timestamp']),
          'webhook-signature': String(request.headers['webhook-signature']),
        });
        new Stripe('sk_test_unused_no_network').webhooks.constructEvent(
          body,
          String(request.headers['x-service-signature']),
          secretOf(),
        );
      } catch (error) {
        refused.push((error as Error).message);
        attempts.push({ id, delivery, status: 400 });
        return response.writeHead(400).end('bad signature');
      }
      attempts.push({ id, delivery, status: 200 });
      accepted.push({
        id,
        delivery,
        sequence: String(request.headers['x-service-sequence']),
        previous: request.headers['x-service-previous-event'] as string | undefined,
      });
      response.writeHead(200).end('ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  return {
    url: `https://127.0.0.1:${port}/hooks`,
    caFile: pki.caFile,
    accepted,
    attempts,
    refused,
    failNextRequests(n: number) {
      failNext = n;
    },
    async down() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
    async up() {
      server.listen(port, '127.0.0.1');
      await once(server, 'listening');
    },
  };
}

t.test('a receiver that is down, then up: every event arrives once, in order, retried with its id', async (t) => {
  const app = await startApp(t);
  const ws = await seedWorkspace(app);
  let secret = '';
  const receiver = await outageReceiver(t, () => secret);
  const createLead = async () => {
    const response = await app.request('/v1/leads', { method: 'POST', key: ws.test, json: leadBody() });
    t.equal(response.status, 201);
  };
  const config = configDir(t);
  const env = { VISA_CRM_API_KEY: ws.test, VISA_CRM_CONFIG_DIR: config, NODE_EXTRA_CA_CERTS: receiver.caFile };
  const args = ['listen', '--forward-to', receiver.url, '--api-url', app.baseUrl, '--poll-interval', '50'];
  const start = (extra: string[] = []) => {
    const child = spawnCli('postgres://unused', [...args, ...extra], env);
    t.teardown(() => {
      if (child.exitCode === null) child.kill();
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    return { child, out: linesOf(child), stderr: () => stderr };
  };
  const stop = async (run: ReturnType<typeof start>) => {
    run.child.kill('SIGINT');
    const [code] = (await once(run.child, 'exit')) as [number];
    return code;
  };

  const first = start();
  const ready = await first.out.waitFor(/Signing secret/);
  secret = /: (whsec_[A-Za-z0-9]{32}) /.exec(ready)![1]!;
  t.match(ready, /\(new, kept in .*listen-secrets\.json for the next runs/, 'a new secret, kept');
  const file = path.join(config, 'listen-secrets.json');
  t.equal(statSync(file).mode & 0o777, 0o600, 'the secrets file is readable by its owner only');
  t.notMatch(readFileSync(file, 'utf8'), new RegExp(ws.test), 'the API key itself is not written');

  await createLead();
  await until(() => receiver.accepted.length === 1, 'the first event arrives');

  // Down: connections refused. Three events wait behind the first that fails, and are tried again with backoff.
  await receiver.down();
  for (let i = 0; i < 3; i++) await createLead();
  // The listener may try the first of them before the others exist; it is tried again until they wait behind it.
  await first.out.waitFor(/\[failed: ECONNREFUSED\].*attempt [2-9], trying again in .*\(2 more waiting behind it\)/);
  await receiver.up();
  await until(
    () => receiver.accepted.length === 4,
    () => `the three arrive once it is up; out:\n${first.out.lines.join('\n')}\n${first.stderr()}`,
  );

  // Up but busy: 503 twice, then accepted; the delivery id and event id stay those of the first attempt.
  receiver.failNextRequests(2);
  await createLead();
  await until(() => receiver.accepted.length === 5, 'accepted on the third attempt');
  const tried = receiver.attempts.slice(-3);
  t.same(
    tried.map((a) => a.status),
    [503, 503, 200],
  );
  t.equal(new Set(tried.map((a) => a.id)).size, 1, 'each attempt carries the same event id');
  t.equal(new Set(tried.map((a) => a.delivery)).size, 1, 'and the same delivery id');
  t.match(
    await first.out.waitFor(/\(attempt 3\)$/),
    /\[200\] \d+ ms \(attempt 3\)$/,
    'the accepted attempt is numbered',
  );

  t.equal(await stop(first), 0, 'stopped with nothing pending: exit 0');
  t.match(first.out.lines.at(-1), /^Stopped after forwarding 5 events; none pending\.$/);

  const listed = (await (await app.request('/v1/events?order=asc&limit=100', { key: ws.test })).json()) as {
    data: { id: string; created_at: string }[];
  };
  const created = listed.data.map((e) => e.id);
  t.same(
    receiver.accepted.map((r) => r.id),
    created,
    'every event once, in order, none lost during the outage',
  );
  t.same(
    receiver.accepted.map((r) => r.sequence),
    ['1', '2', '3', '4', '5'],
  );
  t.same(
    receiver.accepted.map((r) => r.previous),
    [undefined, ...created.slice(0, 4)],
  );
  t.same(receiver.refused, [], 'every request verified with both libraries');

  // Stopped while the receiver is down: the count says what was not forwarded and how to send it.
  const second = start();
  t.equal(
    /: (whsec_[A-Za-z0-9]{32}) /.exec(await second.out.waitFor(/Signing secret/))![1],
    secret,
    'the second run signs with the kept secret',
  );
  await receiver.down();
  await createLead();
  await createLead();
  await second.out.waitFor(/\[failed: ECONNREFUSED\].*trying again in .*\(1 more waiting behind it\)/);
  t.equal(await stop(second), 3, 'stopped with events pending: exit 3');
  const after = (await (await app.request('/v1/events?order=asc&limit=100', { key: ws.test })).json()) as {
    data: { id: string; created_at: string }[];
  };
  const [sixth, seventh] = after.data.slice(5);
  const last = second.out.lines.at(-1)!;
  t.match(last, /^Stopped after forwarding 0 events; 2 events not forwarded \(still pending\)/, 'counted honestly');
  t.match(last, new RegExp(`the first ${sixth!.id} \\(lead\\.created, created ${sixth!.created_at}\\)`));
  t.match(last, new RegExp(`--replay-since ${sixth!.created_at}`));

  // The next run, as the line says, with the receiver up: the two arrive, verified with the secret it already had.
  await receiver.up();
  const third = start(['--replay-since', sixth!.created_at]);
  await until(() => receiver.accepted.length === 7, 'the pending two arrive on the next run');
  t.same(
    receiver.accepted.slice(5).map((r) => r.id),
    [sixth!.id, seventh!.id],
  );
  t.equal(await stop(third), 0);
  t.same(receiver.refused, [], 'the receiver never needed a new secret');

  // --secret signs with the secret given, and leaves the kept one alone.
  const given = 'whsec_' + 'A1b2C3d4'.repeat(4);
  secret = given;
  const fourth = start(['--secret', given, '--replay-since', sixth!.created_at]);
  t.match(await fourth.out.waitFor(/Signing secret/), new RegExp(`${given} \\(given by --secret`));
  await until(() => receiver.accepted.length === 9, 'the replay under the given secret');
  t.equal(await stop(fourth), 0);
  t.same(receiver.refused, [], 'verified with the given secret');
  t.notMatch(readFileSync(file, 'utf8'), new RegExp(given), 'a given secret is not kept');
});

t.test('refuses what it cannot use, in a sentence, with exit status 2', async (t) => {
  const app = await startApp(t);
  const ws = await seedWorkspace(app);
  const config = configDir(t);
  const run = async (args: string[], env: Record<string, string> = {}) => {
    const child = spawnCli('postgres://unused', ['listen', ...args], { VISA_CRM_CONFIG_DIR: config, ...env });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    const [code] = (await once(child, 'exit')) as [number];
    return { code, stderr, stdout };
  };
  const key = { VISA_CRM_API_KEY: ws.test };
  const forwardTo = ['--forward-to', 'http://127.0.0.1:9/hooks'];
  const forward = [...forwardTo, '--api-url', app.baseUrl];
  // A server that is not the service: a 2xx that is no page of events, and a 404.
  const other = createServer((request, response) =>
    request.url?.startsWith('/missing') ? response.writeHead(404).end('no') : response.writeHead(200).end('hello'),
  );
  const otherPort = await listenOn(other);
  t.teardown(() => other.close());
  const { value: scopeless } = await ws.key({ mode: 'test', scopes: ['leads:read'] });

  const cases: [string, string[], Record<string, string>, RegExp][] = [
    ['a live key without --live', forward, { VISA_CRM_API_KEY: ws.live }, /not a secret test key .*--live/],
    ['no key', forward, { VISA_CRM_API_KEY: '' }, /--api-key or VISA_CRM_API_KEY/],
    ['a public key', forward, { VISA_CRM_API_KEY: ws.publicTest }, /not a secret test key/],
    ['a key without events:read', forward, { VISA_CRM_API_KEY: scopeless }, /Events API refused: .*events:read/],
    ['--api-url nope', [...forwardTo, '--api-url', 'nope'], key, /^--api-url is not an address .*: nope$/m],
    ['--api-url ftp:', [...forwardTo, '--api-url', 'ftp://127.0.0.1/'], key, /--api-url must be an http/],
    [
      '--api-url unknown host',
      [...forwardTo, '--api-url', 'http://nope.invalid'],
      key,
      /--api-url names a host that is unknown/,
    ],
    [
      '--api-url not the API',
      [...forwardTo, '--api-url', `http://127.0.0.1:${otherPort}`],
      key,
      /did not answer as the visa-crm API/,
    ],
    [
      '--api-url a 404',
      [...forwardTo, '--api-url', `http://127.0.0.1:${otherPort}/missing`],
      key,
      /Events API refused: .*\(404\)/,
    ],
    ['--forward-to nope', ['--forward-to', 'nope', '--api-url', app.baseUrl], key, /--forward-to is not an address/],
    ['--forward-to ftp:', ['--forward-to', 'ftp://h/x', '--api-url', app.baseUrl], key, /--forward-to must be an http/],
    [
      '--forward-to with a password',
      ['--forward-to', 'http://u:p@127.0.0.1/', '--api-url', app.baseUrl],
      key,
      /--forward-to must not carry a user name/,
    ],
    ['--events lead.foo', [...forward, '--events', 'lead.foo'], key, /--events names no event kind: lead\.foo /],
    [
      '--events two unknown',
      [...forward, '--events', 'lead.*,nope,task.*,x.*'],
      key,
      /--events names no event kind: nope, x\.\*/,
    ],
    ['--events empty', [...forward, '--events', ' , '], key, /--events names no kind/],
    ['--replay-since yesterday', [...forward, '--replay-since', 'yesterday'], key, /--replay-since is not a date/],
    [
      '--poll-interval 5',
      [...forward, '--poll-interval', '5'],
      key,
      /--poll-interval is a number of milliseconds from 10 to 60000: 5/,
    ],
    ['--poll-interval 1e3', [...forward, '--poll-interval', '1e3'], key, /--poll-interval is a number of milliseconds/],
    [
      '--poll-interval soon',
      [...forward, '--poll-interval', 'soon'],
      key,
      /--poll-interval is a number of milliseconds/,
    ],
    [
      '--secret short',
      [...forward, '--secret', 'whsec_short'],
      key,
      /--secret is a signing secret as the service issues them/,
    ],
    ['--secret without prefix', [...forward, '--secret', 'A1b2C3d4'.repeat(4)], key, /--secret is a signing secret/],
    ['an unknown option', [...forward, '--frobnicate'], key, /unknown option '--frobnicate'/],
    ['no --forward-to', ['--api-url', app.baseUrl], key, /required option '--forward-to <url>' not specified/],
    ['an option without its value', [...forward, '--events'], key, /option '--events <kinds>' argument missing/],
  ];
  for (const [why, args, env, sentence] of cases) {
    const result = await run(args, env);
    t.equal(result.code, 2, `${why}: exit status 2`);
    t.match(result.stderr, sentence, `${why}: ${result.stderr.trim()}`);
    t.notMatch(result.stdout, /Ready/, `${why}: never started`);
  }
});
