import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { seedWorkspace } from '../support/app.js';
import { signatureHeader } from '../../src/webhooks/signing.js';
import { eachNotFound, foreignReaches } from './support/foreign-keys.js';
import { webhookHarness, type Harness } from './support/harness.js';
import { sleep, waitFor, type ReceivedRequest } from './support/receiver.js';

// POST /v1/webhooks/{id}/test and `send_test` at creation, through the public API with secret keys, delivered by
// the real workers to a real HTTPS receiver on loopback (the test CA), signed with the endpoint's secret.

interface Envelope {
  id: string;
  event: string;
  tenant_id: string;
  data: Record<string, unknown>;
}

/** How long a delivery may take on a loaded machine (a bound on patience, not a timing assertion). */
const PATIENCE_MS = 90_000;

const envelopeOf = (r: ReceivedRequest) => JSON.parse(r.body) as Envelope;

/** The receiver's webhook.test requests for one path. */
const testsAt = (h: Harness, path: string) =>
  h.receiver.requests.filter((r) => r.path === path && envelopeOf(r).event === 'webhook.test');

function ping(h: Harness, id: string, key: string, idempotencyKey?: string) {
  return h.request(`/v1/webhooks/${id}/test`, {
    method: 'POST',
    key,
    ...(idempotencyKey ? { headers: { 'idempotency-key': idempotencyKey } } : {}),
  });
}

/** Checks both signatures of a delivery with the endpoint's secret, as a receiver would. */
function verifies(request: ReceivedRequest, secret: string): boolean {
  const t = Number(/t=(\d+)/.exec(String(request.headers['x-service-signature']))![1]);
  const own = signatureHeader([secret], t, request.body) === request.headers['x-service-signature'];
  new Webhook(secret).verify(request.body, {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  });
  return own;
}

t.test(
  'a secret key pings its endpoint: webhook.test to that endpoint alone, signed, its id in the answer',
  async (t) => {
    const h = await webhookHarness(t);
    const target = await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/target'), events: ['lead.created'] });
    // Subscribed to every kind, webhook.test included: a ping of another endpoint still never reaches it.
    await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/other'), events: ['lead.created', 'webhook.test'] });
    await h.startWorkers();

    const response = await ping(h, target.id, h.ws.live);
    t.equal(response.status, 202);
    t.ok(response.headers.get('ratelimit-remaining'), 'rate-limit headers, as every 2xx with a body');
    const { event_id } = (await response.json()) as { event_id: string };
    const delivered = await waitFor(() => testsAt(h, '/target')[0], 'webhook.test arrives', PATIENCE_MS);
    const envelope = envelopeOf(delivered);
    t.equal(envelope.id, event_id, 'the event id answered is the one delivered');
    t.equal(delivered.headers['x-service-event'], 'webhook.test');
    t.equal(envelope.tenant_id, h.ws.workspace.id);
    t.equal(envelope.data.id, target.id, 'data is the endpoint in its public shape');
    t.notOk('secret' in envelope.data, 'never its secret');
    t.ok(verifies(delivered, target.secret), 'signed with the endpoint secret (both signature headers)');

    const listed = (await (await h.request(`/v1/events/${event_id}`, { key: h.ws.live })).json()) as Envelope;
    t.equal(listed.event, 'webhook.test', 'the Events API shows it too');
    await sleep(300);
    t.equal(testsAt(h, '/other').length, 0, 'the other endpoint got nothing');
    t.equal(testsAt(h, '/target').length, 1, 'sent once');
  },
);

t.test('send_test at creation sends the new endpoint its first webhook.test', async (t) => {
  const h = await webhookHarness(t);
  await h.startWorkers();
  const created = await h.createEndpoint({
    url: h.receiver.url('127.0.0.1', '/new'),
    events: ['lead.created'],
    send_test: true,
  });
  const testEventId = created.test_event_id as string;
  t.match(testEventId, /^[0-9a-f-]{36}$/, 'the answer names the webhook.test event');
  const delivered = await waitFor(() => testsAt(h, '/new')[0], 'the creation test arrives', PATIENCE_MS);
  t.equal(envelopeOf(delivered).id, testEventId);
  t.ok(verifies(delivered, created.secret), 'signed with the secret the creation answered');
  t.equal(delivered.headers['x-service-sequence'], '1', 'the first delivery of the endpoint');

  const plain = await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/plain'), events: ['lead.created'] });
  t.notOk('test_event_id' in plain, 'without send_test nothing is sent and nothing named');
  const falsy = await h.createEndpoint({
    url: h.receiver.url('127.0.0.1', '/plain'),
    events: ['lead.created'],
    send_test: false,
  });
  t.notOk('test_event_id' in falsy);
  const wrongType = await h.request('/v1/webhooks', {
    method: 'POST',
    key: h.ws.live,
    json: { url: h.receiver.url(), events: ['lead.created'], send_test: 'yes' },
  });
  t.equal(wrongType.status, 400);
  t.ok(((await wrongType.json()) as { fields: Record<string, string> }).fields.send_test, 'the field is named');
  await sleep(300);
  t.equal(testsAt(h, '/plain').length, 0);
});

t.test('keys reach only their own workspace and mode; scope and kind as for the other webhook routes', async (t) => {
  const h = await webhookHarness(t);
  const live = await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/live'), events: ['lead.created'] });
  const test = await h.createEndpoint(
    { url: h.receiver.url('127.0.0.1', '/test'), events: ['lead.created'] },
    h.ws.test,
  );
  await h.startWorkers();
  const other = await seedWorkspace(h, { slug: 'other-consultancy', name: 'Other' });

  await eachNotFound(t, foreignReaches(h, { live: live.id, test: test.id }, other), (id, key) => ping(h, id, key));
  const malformed = await ping(h, 'not-a-uuid', h.ws.live);
  t.equal(malformed.status, 404, 'a malformed id is not found, as on every path of the API');

  const sandboxed = await ping(h, test.id, h.ws.test);
  t.equal(sandboxed.status, 202, 'a test key pings its test endpoint');
  const { event_id } = (await sandboxed.json()) as { event_id: string };
  const arrived = await waitFor(() => testsAt(h, '/test')[0], 'the test endpoint gets it', PATIENCE_MS);
  t.equal(envelopeOf(arrived).id, event_id);

  const { value: readOnly } = await h.ws.key({ mode: 'live', scopes: ['leads:read'] });
  const noScope = await ping(h, live.id, readOnly);
  t.equal(noScope.status, 403);
  t.equal(((await noScope.json()) as { error: string }).error, 'insufficient_scope');
  const publicKey = await ping(h, live.id, h.ws.publicLive);
  t.equal(publicKey.status, 403, 'a public key cannot');
  const none = await h.request(`/v1/webhooks/${live.id}/test`, { method: 'POST' });
  t.equal(none.status, 401);

  const deleted = await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/gone'), events: ['lead.created'] });
  t.equal((await h.request(`/v1/webhooks/${deleted.id}`, { method: 'DELETE', key: h.ws.live })).status, 204);
  t.equal((await ping(h, deleted.id, h.ws.live)).status, 404, 'a deleted endpoint is not found');
  await sleep(300);
  t.equal(testsAt(h, '/live').length, 0, 'no refused ping reached the live endpoint');
});

t.test('an Idempotency-Key sends one webhook.test however often the request is repeated', async (t) => {
  const h = await webhookHarness(t);
  const a = await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/a'), events: ['lead.created'] });
  const b = await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/b'), events: ['lead.created'] });
  await h.startWorkers();

  // Sent at once: one of them waits for the other's key lock, then answers the same event.
  const answers = await Promise.all([1, 2, 3].map(() => ping(h, a.id, h.ws.live, 'ping-1')));
  t.same(
    answers.map((r) => r.status),
    [202, 202, 202],
  );
  const bodies = (await Promise.all(answers.map((r) => r.json()))) as { event_id: string }[];
  t.equal(new Set(bodies.map((b) => b.event_id)).size, 1, 'one event id for the three');
  t.equal(
    answers.filter((r) => r.headers.get('idempotent-replayed') === 'true').length,
    2,
    'the repeats are marked as replayed',
  );
  const again = await ping(h, a.id, h.ws.live, 'ping-1');
  t.same(await again.json(), bodies[0], 'a later repeat answers the same');

  const reused = await ping(h, b.id, h.ws.live, 'ping-1');
  t.equal(reused.status, 409, 'the same key for another endpoint');
  t.equal(((await reused.json()) as { error: string }).error, 'idempotency_key_reused');
  const otherMode = await h.createEndpoint(
    { url: h.receiver.url('127.0.0.1', '/t'), events: ['lead.created'] },
    h.ws.test,
  );
  t.equal((await ping(h, otherMode.id, h.ws.test, 'ping-1')).status, 202, 'keys of the test mode are apart');
  // Another workspace choosing the same key neither replays this workspace's answer nor is refused by it.
  const other = await seedWorkspace(h, { slug: 'other-pinger', name: 'Other' });
  const theirs = await h.createEndpoint(
    { url: h.receiver.url('127.0.0.1', '/theirs'), events: ['lead.created'] },
    other.live,
  );
  const theirPing = await ping(h, theirs.id, other.live, 'ping-1');
  t.equal(theirPing.status, 202, "another workspace's same key is its own");
  t.not(theirPing.headers.get('idempotent-replayed'), 'true', 'and not a replay of this one');
  const theirEvent = ((await theirPing.json()) as { event_id: string }).event_id;
  t.not(theirEvent, bodies[0]!.event_id, 'a new event of theirs');
  const theirArrival = await waitFor(() => testsAt(h, '/theirs')[0], 'their test arrives', PATIENCE_MS);
  t.equal(envelopeOf(theirArrival).id, theirEvent);
  t.equal(envelopeOf(theirArrival).tenant_id, other.workspace.id, 'in their workspace');

  const badKey = await ping(h, a.id, h.ws.live, 'has spaces');
  t.equal(badKey.status, 400, 'a malformed Idempotency-Key');

  const second = await ping(h, a.id, h.ws.live, 'ping-2');
  const secondId = ((await second.json()) as { event_id: string }).event_id;
  t.not(secondId, bodies[0]!.event_id, 'a new key sends a new test');
  await waitFor(() => testsAt(h, '/a').length >= 2, 'both tests arrive', PATIENCE_MS);
  await sleep(300);
  t.same(
    testsAt(h, '/a').map((r) => envelopeOf(r).id),
    [bodies[0]!.event_id, secondId],
    'once each, in order',
  );
});

t.test('pings take tokens from the webhooks:manage bucket like the other writes', async (t) => {
  const h = await webhookHarness(t, {
    definition: { limits: { rate: { scopes: { 'webhooks:manage': { capacity: 3, refill_per_second: 0.001 } } } } },
  });
  const endpoint = await h.createEndpoint({ url: h.receiver.url(), events: ['lead.created'] });
  t.equal((await ping(h, endpoint.id, h.ws.live)).status, 202);
  t.equal((await ping(h, endpoint.id, h.ws.live)).status, 202);
  const limited = await ping(h, endpoint.id, h.ws.live);
  t.equal(limited.status, 429, 'the creation and two pings used the three tokens');
  const body = (await limited.json()) as { error: string; scope: string };
  t.equal(body.error, 'rate_limited');
  t.equal(body.scope, 'webhooks:manage');
});

t.test('the OpenAPI document describes the route and the creation flag', async (t) => {
  const h = await webhookHarness(t);
  const document = (await (await h.request('/openapi.json')).json()) as {
    paths: Record<string, Record<string, Record<string, unknown>>>;
    components?: unknown;
  };
  const operation = document.paths['/v1/webhooks/{id}/test']?.post as {
    operationId: string;
    parameters: { name: string; in: string }[];
    responses: Record<string, unknown>;
    security?: unknown;
  };
  t.equal(operation.operationId, 'sendWebhookEndpointTest');
  t.ok(
    operation.parameters.some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key'),
    'Idempotency-Key documented',
  );
  t.ok(operation.parameters.some((p) => p.in === 'path' && p.name === 'id'));
  for (const status of ['202', '400', '401', '403', '404', '409', '429']) t.ok(operation.responses[status], status);
  const text = JSON.stringify(document.paths['/v1/webhooks']!.post);
  t.match(text, /send_test/, 'send_test in WebhookEndpointCreate');
  t.match(text, /test_event_id/, 'test_event_id in WebhookEndpointCreated');
});
