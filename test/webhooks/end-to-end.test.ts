import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import t from 'tap';
import { projections } from '../../src/projections/index.js';
import { rebuildReadModels } from '../../src/projections/rebuild.js';
import { signatureHeader } from '../../src/webhooks/signing.js';
import { webhookHarness } from './support/harness.js';
import { waitFor } from './support/receiver.js';
import { TYPESCRIPT_ARGS } from '../support/typescript.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

t.test(
  'POST /v1/leads → lead.created delivered to the live endpoint with the lead as data; a test key to the test endpoint',
  async (t) => {
    const h = await webhookHarness(t);
    await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/live'), events: ['lead.created', 'lead.updated'] });
    await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/test'), events: ['lead.created'] }, h.ws.test);
    await h.startWorkers();
    const body = { full_name: 'Webhook Lead', phone: '9876512345', email: 'webhook.lead@example.com', consent: true };
    const created = await h.request('/v1/leads', { method: 'POST', key: h.ws.live, json: body });
    t.equal(created.status, 201);
    const { id } = (await created.json()) as { id: string };
    const lead = (await (await h.request(`/v1/leads/${id}`, { key: h.ws.live })).json()) as Record<string, unknown>;
    const request = await waitFor(
      () =>
        h.receiver.requests.find(
          (r) => r.path === '/live' && (JSON.parse(r.body) as { data: { id: string } }).data.id === id,
        ),
      'lead.created arrives',
    );
    const envelope = JSON.parse(request.body) as {
      id: string;
      event: string;
      tenant_id: string;
      data: Record<string, unknown>;
    };
    t.equal(envelope.event, 'lead.created');
    t.equal(envelope.tenant_id, h.ws.workspace.id);
    t.same(envelope.data, lead, 'data is the lead in its public shape, as GET shows it right after creation');
    const stored = await h.pool.query<{ id: string }>(
      "SELECT id FROM events WHERE type = 'lead.created' AND data->'payload'->>'id' = $1",
      [id],
    );
    t.equal(envelope.id, stored.rows[0]!.id, 'the envelope id is the event id');

    const sandbox = await h.request('/v1/leads', {
      method: 'POST',
      key: h.ws.test,
      json: { ...body, email: 'sandbox.lead@example.com', phone: '9876512346' },
    });
    t.equal(sandbox.status, 201);
    const sandboxId = ((await sandbox.json()) as { id: string }).id;
    const sandboxRequest = await waitFor(
      () => h.receiver.requests.find((r) => (JSON.parse(r.body) as { data: { id: string } }).data.id === sandboxId),
      'the sandbox lead arrives',
    );
    t.equal(sandboxRequest.path, '/test', 'a test-key lead goes to the test endpoint');
    t.equal(h.receiver.requests.filter((r) => r.path === '/test').length, 1, 'and the live lead did not');
  },
);

t.test('a read-model rebuild gives the same endpoint rows', async (t) => {
  const h = await webhookHarness(t);
  const a = await h.createEndpoint({ url: h.receiver.url(), events: ['lead.created'] });
  await h.createEndpoint({ url: h.receiver.url(), events: ['lead.lost'], description: 'losses' }, h.ws.test);
  t.equal((await h.admin('POST', `/webhooks/${a.id}/rotate-secret`)).status, 200);
  const select = 'SELECT * FROM webhook_endpoints ORDER BY id';
  const before = (await h.pool.query(select)).rows;
  await rebuildReadModels(h.pool, projections, h.services.personalData);
  t.same((await h.pool.query(select)).rows, before);
});

t.test('the example receiver verifies real deliveries and refuses forged ones', async (t) => {
  const h = await webhookHarness(t);
  const port = await freePort();
  const url = `https://localhost:${port}/webhooks`;
  const endpoint = await h.createEndpoint({ url, events: ['document.uploaded'] });
  const child = spawn(process.execPath, [...TYPESCRIPT_ARGS, 'examples/webhook-receiver.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      WEBHOOK_SECRET: endpoint.secret,
      PORT: String(port),
      TLS_KEY: path.join(h.pki.dir, 'server.key'),
      TLS_CERT: path.join(h.pki.dir, 'server.crt'),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => void child.kill());
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await waitFor(() => out.includes('listening'), 'the example starts');
  await h.startWorkers();
  const event = await h.appendEvent('document.uploaded', { id: 'doc-1', file_name: 'passport.pdf' });
  await waitFor(() => out.includes(`document.uploaded ${event.id}`), 'the example handled the event');
  // The receiver prints as it answers; the worker records the attempt a moment later.
  const log = await waitFor(async () => {
    const page = (
      (await (await h.admin('GET', `/webhooks/${endpoint.id}/deliveries`)).json()) as {
        data: { status: string; log: { response_status: number }[] }[];
      }
    ).data;
    return page.some((d) => d.status !== 'pending') ? page : undefined;
  }, 'the attempt is recorded');
  t.match(log, [{ status: 'succeeded', log: [{ response_status: 204 }] }], 'it acknowledged with 204');

  const https = await import('node:https');
  const forged = JSON.stringify({
    id: event.id,
    event: 'document.uploaded',
    tenant_id: h.ws.workspace.id,
    created_at: new Date().toISOString(),
    data: {},
  });
  const status = await new Promise<number>((resolve, reject) => {
    const req = https.request(
      url,
      {
        method: 'POST',
        ca: h.pki.ca,
        headers: {
          'x-service-signature': signatureHeader(
            ['whsec_wrongwrongwrongwrongwrongwrongwr'],
            Math.floor(Date.now() / 1000),
            forged,
          ),
        },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end(forged);
  });
  t.equal(status, 400, 'a body signed with another secret is refused');
});
