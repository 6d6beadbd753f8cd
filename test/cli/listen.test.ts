import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import t from 'tap';
import { seedWorkspace, startApp } from '../support/app.js';
import { spawnCli } from '../support/cli.js';
import { leadBody } from '../leads/helpers.js';

// `visa-crm listen` follows the Events API and forwards each event to a local receiver, signed as deliveries are:
// every event created while it runs arrives once, in order, and verifies with the Standard Webhooks library and with
// Stripe's constructEvent, across an outage of the service's address and a restart with --replay-since.

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
  const env = { VISA_CRM_API_KEY: ws.test };
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
  t.match(out.lines.at(-1), /Stopped after forwarding 7 events/);
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

  // A second run with --replay-since sends what happened since then first, with a new secret.
  receiver.received.length = 0;
  const since = new Date(Date.now() - 60 * 60_000).toISOString();
  const second = spawnCli('postgres://unused', [...args, '--replay-since', since, '--events', 'lead.*'], env);
  const out2 = linesOf(second);
  secret = /: (whsec_[A-Za-z0-9]{32}) /.exec(await out2.waitFor(/Signing secret/))![1]!;
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

t.test('refuses what it cannot use, in a sentence', async (t) => {
  const app = await startApp(t);
  const ws = await seedWorkspace(app);
  const run = async (args: string[], env: Record<string, string> = {}) => {
    const child = spawnCli('postgres://unused', ['listen', ...args], env);
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const [code] = (await once(child, 'exit')) as [number];
    return { code, stderr };
  };
  const forward = ['--forward-to', 'http://127.0.0.1:9/hooks', '--api-url', app.baseUrl];
  const live = await run(forward, { VISA_CRM_API_KEY: ws.live });
  t.equal(live.code, 2);
  t.match(live.stderr, /not a secret test key .*--live/);
  const none = await run(forward, { VISA_CRM_API_KEY: '' });
  t.match(none.stderr, /--api-key or VISA_CRM_API_KEY/);
  const { value } = await ws.key({ mode: 'test', scopes: ['leads:read'] });
  const scopeless = await run(forward, { VISA_CRM_API_KEY: value });
  t.equal(scopeless.code, 2);
  t.match(scopeless.stderr, /Events API refused: .*events:read/);
  const badSince = await run([...forward, '--replay-since', 'yesterday'], { VISA_CRM_API_KEY: ws.test });
  t.match(badSince.stderr, /--replay-since is not a date/);
});
