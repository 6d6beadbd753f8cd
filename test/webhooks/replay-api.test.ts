import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { seedWorkspace } from '../support/app.js';
import { idempotencyLock } from '../../src/intake/idempotency.js';
import { REPLAY_MAX_DELIVERIES, REPLAY_OPERATION, REPLAY_RATE } from '../../src/commands/webhooks/replay.js';
import { runCommand } from '../../src/commands/run-command.js';
import { fanOutBatch } from '../../src/subscribers/webhook-fanout.js';
import { signatureHeader } from '../../src/webhooks/signing.js';
import { eachNotFound, foreignReaches } from './support/foreign-keys.js';
import { resourcePayload, webhookHarness, type Harness } from './support/harness.js';
import { sleep, waitFor, type ReceivedRequest } from './support/receiver.js';

// POST /v1/webhooks/{id}/replay through the public API with secret keys, delivered by the real workers to a real
// HTTPS receiver on loopback (the test CA), on a real PostgreSQL.

/** How long deliveries may take on a loaded machine (a bound on patience, not a timing assertion). */
const PATIENCE_MS = 90_000;

interface Summary {
  id: string;
  endpoint_id: string;
  since: string;
  until: string;
  kinds: string[];
  only_failed: boolean;
  queued: number;
  created_at: string;
}

interface Refused {
  error: string;
  message: string;
  request_id: string;
  fields?: Record<string, string>;
  scope?: string;
  retry_after?: number;
}

function replay(h: Harness, id: string, body: unknown, key = h.ws.live, idempotencyKey?: string) {
  return h.request(`/v1/webhooks/${id}/replay`, {
    method: 'POST',
    key,
    json: body,
    ...(idempotencyKey ? { headers: { 'idempotency-key': idempotencyKey } } : {}),
  });
}

const at = (h: Harness, path: string) => h.receiver.requests.filter((r) => r.path === path);
const eventIdOf = (r: ReceivedRequest) => String(r.headers['webhook-id']);

/** Checks both signatures of a delivery with the endpoint's secret, as a receiver would. */
function verifies(request: ReceivedRequest, secret: string): boolean {
  const stamp = Number(/t=(\d+)/.exec(String(request.headers['x-service-signature']))![1]);
  new Webhook(secret).verify(request.body, {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  });
  return signatureHeader([secret], stamp, request.body) === request.headers['x-service-signature'];
}

/** The replayed deliveries (resends) of an endpoint, in the order they come due. */
async function resendsOf(h: Harness, endpointId: string) {
  const rows = await h.pool.query<{ id: string; event_id: string; sequence: string; resend_of: string }>(
    `SELECT id, event_id, sequence::text, resend_of FROM webhook_deliveries
      WHERE endpoint_id = $1 AND resend_of IS NOT NULL ORDER BY created_at`,
    [endpointId],
  );
  return rows.rows;
}

t.test('a replay sends the window’s events again: same event ids, new delivery ids, in order, signed', async (t) => {
  const h = await webhookHarness(t);
  const endpoint = await h.createEndpoint({
    url: h.receiver.url(),
    events: ['document.uploaded', 'document.rejected'],
  });
  await h.startWorkers();
  await sleep(5);
  const since = new Date();
  const kinds = [
    'document.uploaded',
    'document.rejected',
    'document.uploaded',
    'document.rejected',
    'document.uploaded',
  ];
  const inWindow: string[] = [];
  for (const kind of kinds) inWindow.push((await h.appendEvent(kind, resourcePayload())).id);
  await sleep(5);
  const until = new Date();
  await sleep(5);
  const after = (await h.appendEvent('document.uploaded', resourcePayload())).id;
  await waitFor(() => at(h, '/hooks').length >= 6 || undefined, 'the six first deliveries arrive', PATIENCE_MS);
  const firsts = new Map(at(h, '/hooks').map((r) => [eventIdOf(r), r]));

  const response = await replay(h, endpoint.id, { since: since.toISOString(), until: until.toISOString() });
  t.equal(response.status, 202);
  t.ok(response.headers.get('ratelimit-remaining'), 'rate-limit headers, as every 2xx with a body');
  const summary = (await response.json()) as Summary;
  t.equal(summary.queued, 5, 'the five events of the window, not the one after it');
  t.equal(summary.endpoint_id, endpoint.id);
  t.equal(summary.since, since.toISOString());
  t.equal(summary.until, until.toISOString());
  t.same(summary.kinds, ['document.uploaded', 'document.rejected'], 'every kind the endpoint subscribes to');
  t.equal(summary.only_failed, false);

  const queued = await resendsOf(h, endpoint.id);
  t.same(
    queued.map((d) => d.event_id),
    inWindow,
    'queued in event order, each once',
  );
  await waitFor(() => at(h, '/hooks').length >= 11 || undefined, 'the five replayed deliveries arrive', PATIENCE_MS);
  await sleep(300);
  const replayed = at(h, '/hooks').slice(6);
  t.equal(replayed.length, 5, 'nothing more arrives');
  t.same(new Set(replayed.map(eventIdOf)), new Set(inWindow), 'the same event ids');
  t.notOk(
    replayed.some((r) => eventIdOf(r) === after),
    'the event after the window is not replayed',
  );
  for (const r of replayed) {
    const first = firsts.get(eventIdOf(r))!;
    t.not(r.headers['x-service-delivery'], first.headers['x-service-delivery'], 'a new delivery id');
    t.equal(r.headers['x-service-sequence'], first.headers['x-service-sequence'], 'the event’s sequence number');
    t.equal(r.body, first.body, 'the same body, in the same payload version');
    t.ok(verifies(r, endpoint.secret), 'signed with the endpoint’s secret (both signature headers)');
  }

  const narrowed = await replay(h, endpoint.id, { since: since.toISOString(), kinds: ['document.rejected'] });
  t.equal(narrowed.status, 202);
  const onlyRejected = (await narrowed.json()) as Summary;
  t.equal(onlyRejected.queued, 2, 'only the kind asked for (until defaults to now)');
  t.same(onlyRejected.kinds, ['document.rejected']);
  t.same(
    (await resendsOf(h, endpoint.id)).slice(5).map((d) => d.event_id),
    [inWindow[1], inWindow[3]],
    'the two document.rejected events, in order',
  );
});

t.test('the window and the kinds are checked: 30 days at most, until after since, subscribed kinds', async (t) => {
  const h = await webhookHarness(t);
  const endpoint = await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] });
  const now = Date.now();
  const cases: [string, unknown, string][] = [
    ['older than 30 days', { since: new Date(now - 31 * 86_400_000).toISOString() }, 'since'],
    ['since missing', {}, 'since'],
    ['since not a time', { since: 'yesterday' }, 'since'],
    ['since in the future', { since: new Date(now + 3_600_000).toISOString() }, 'since'],
    [
      'until before since',
      { since: new Date(now - 3_600_000).toISOString(), until: new Date(now - 7_200_000).toISOString() },
      'until',
    ],
    ['a kind not subscribed', { since: new Date(now - 3_600_000).toISOString(), kinds: ['lead.created'] }, 'kinds'],
    ['an unknown kind', { since: new Date(now - 3_600_000).toISOString(), kinds: ['lead.exploded'] }, 'kinds'],
    ['an unknown field', { since: new Date(now - 3_600_000).toISOString(), only: true }, 'only'],
  ];
  for (const [why, body, field] of cases) {
    const response = await replay(h, endpoint.id, body);
    t.equal(response.status, 400, why);
    const refused = (await response.json()) as Refused;
    t.equal(refused.error, 'validation_failed', why);
    t.ok(
      Object.keys(refused.fields ?? {}).some((name) => name.startsWith(field)),
      `${why}: the field ${field} is named`,
    );
    t.ok(refused.request_id, 'in the Error shape');
  }
  const edge = await replay(h, endpoint.id, { since: new Date(now - 29 * 86_400_000).toISOString() });
  t.equal(edge.status, 202, '29 days back is within the bound');
  const count = await h.pool.query('SELECT count(*)::int AS n FROM webhook_replays');
  t.equal(count.rows[0].n, 1, 'only the accepted request is recorded');
});

t.test('an Idempotency-Key queues one set of deliveries, even for requests sent at once', async (t) => {
  const h = await webhookHarness(t);
  const endpoint = await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] });
  const other = await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/other'), events: ['document.uploaded'] });
  await h.startWorkers();
  const since = new Date(Date.now() - 1000).toISOString();
  for (let i = 0; i < 3; i++) await h.appendEvent('document.uploaded', resourcePayload());
  await waitFor(() => at(h, '/hooks').length >= 3 || undefined, 'the first deliveries arrive', PATIENCE_MS);

  const first = await replay(h, endpoint.id, { since }, h.ws.live, 'replay-1');
  t.equal(first.status, 202);
  const summary = (await first.json()) as Summary;
  t.equal(summary.queued, 3);
  const again = await replay(h, endpoint.id, { since }, h.ws.live, 'replay-1');
  t.equal(again.status, 202);
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  t.same(await again.json(), summary, 'the same summary');
  t.equal((await resendsOf(h, endpoint.id)).length, 3, 'queued once');

  const changed = await replay(h, endpoint.id, { since, kinds: ['document.uploaded'] }, h.ws.live, 'replay-1');
  t.equal(changed.status, 409, 'the same key with another body');
  t.equal(((await changed.json()) as Refused).error, 'idempotency_key_reused');
  const elsewhere = await replay(h, other.id, { since }, h.ws.live, 'replay-1');
  t.equal(elsewhere.status, 409, 'the same key for another endpoint');
  t.equal((await resendsOf(h, other.id)).length, 0, 'nothing queued for it');

  // Forced: both requests pass the first look for the key before either holds its lock, which this test holds.
  const holder = await h.pool.connect();
  try {
    await holder.query('BEGIN');
    const lock = idempotencyLock(
      { tenantId: h.ws.workspace.id, sandbox: false, operation: REPLAY_OPERATION },
      'replay-2',
    );
    await holder.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [lock]);
    const both = [1, 2].map(() => replay(h, other.id, { since }, h.ws.live, 'replay-2'));
    await waitFor(async () => {
      const waiting = await h.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
      );
      return waiting.rows[0]!.n >= 2 || undefined;
    }, 'both requests wait for the key’s lock');
    await holder.query('COMMIT');
    const answers = await Promise.all(both);
    t.same(
      answers.map((r) => r.status),
      [202, 202],
    );
    const bodies = (await Promise.all(answers.map((r) => r.json()))) as Summary[];
    t.equal(bodies[0]!.id, bodies[1]!.id, 'one replay for the two');
    t.equal(
      answers.filter((r) => r.headers.get('idempotent-replayed') === 'true').length,
      1,
      'the one that waited answers the first summary',
    );
  } finally {
    holder.release();
  }
  t.equal((await resendsOf(h, other.id)).length, 3, 'one set of deliveries');
  const recorded = await h.pool.query('SELECT count(*)::int AS n FROM webhook_replays WHERE endpoint_id = $1', [
    other.id,
  ]);
  t.equal(recorded.rows[0].n, 1);
});

t.test('another workspace, the other mode, a deleted endpoint: 404 and nothing queued', async (t) => {
  const h = await webhookHarness(t);
  const live = await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] });
  const test = await h.createEndpoint(
    { url: h.receiver.url('127.0.0.1', '/test'), events: ['document.uploaded'] },
    h.ws.test,
  );
  await h.startWorkers();
  const since = new Date(Date.now() - 1000).toISOString();
  await h.appendEvent('document.uploaded', resourcePayload());
  await waitFor(() => at(h, '/hooks').length >= 1 || undefined, 'the first delivery arrives', PATIENCE_MS);
  const other = await seedWorkspace(h, { slug: 'other-consultancy', name: 'Other' });
  await eachNotFound(t, foreignReaches(h, { live: live.id, test: test.id }, other), (id, key, why) =>
    replay(h, id, { since }, key, `k-${why.length}`),
  );
  const { value: readOnly } = await h.ws.key({ mode: 'live', scopes: ['leads:read'] });
  t.equal((await replay(h, live.id, { since }, readOnly)).status, 403, 'without webhooks:manage');
  t.equal((await replay(h, live.id, { since }, h.ws.publicLive)).status, 403, 'a public key');

  const gone = await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/gone'), events: ['document.uploaded'] });
  t.equal((await h.request(`/v1/webhooks/${gone.id}`, { method: 'DELETE', key: h.ws.live })).status, 204);
  const deleted = await replay(h, gone.id, { since });
  t.equal(deleted.status, 404, 'a deleted endpoint is not found');
  const resends = await h.pool.query('SELECT count(*)::int AS n FROM webhook_deliveries WHERE resend_of IS NOT NULL');
  t.equal(resends.rows[0].n, 0, 'nothing was queued');
  t.equal((await h.pool.query('SELECT count(*)::int AS n FROM webhook_replays')).rows[0].n, 0);
});

t.test('a paused endpoint keeps the replay waiting; replays per endpoint are rate-limited (429)', async (t) => {
  const h = await webhookHarness(t);
  const endpoint = await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] });
  await h.startWorkers();
  const since = new Date(Date.now() - 1000).toISOString();
  await h.appendEvent('document.uploaded', resourcePayload());
  await waitFor(() => at(h, '/hooks').length >= 1 || undefined, 'the first delivery arrives', PATIENCE_MS);
  await h.pool.query("UPDATE webhook_endpoints SET status = 'paused', paused_reason = 'test' WHERE id = $1", [
    endpoint.id,
  ]);
  const paused = await replay(h, endpoint.id, { since });
  t.equal(paused.status, 202, 'accepted while paused');
  t.equal(((await paused.json()) as Summary).queued, 1);
  await sleep(1000);
  t.equal(at(h, '/hooks').length, 1, 'nothing sent while paused');
  const [waiting] = await resendsOf(h, endpoint.id);
  const state = await h.pool.query('SELECT status FROM webhook_deliveries WHERE id = $1', [waiting!.id]);
  t.equal(state.rows[0].status, 'pending', 'it waits');

  for (let i = 1; i < REPLAY_RATE.capacity; i++)
    t.equal((await replay(h, endpoint.id, { since })).status, 202, `replay ${i + 1}`);
  const limited = await replay(h, endpoint.id, { since });
  t.equal(limited.status, 429, `the ${REPLAY_RATE.capacity + 1}th replay within the hour`);
  const refused = (await limited.json()) as Refused;
  t.equal(refused.error, 'rate_limited');
  t.equal(refused.scope, 'webhook_replay');
  t.ok(refused.retry_after! >= 1);
  t.equal(limited.headers.get('retry-after'), String(refused.retry_after));
  const count = await h.pool.query('SELECT count(*)::int AS n FROM webhook_replays WHERE endpoint_id = $1', [
    endpoint.id,
  ]);
  t.equal(count.rows[0].n, REPLAY_RATE.capacity, 'the refused one recorded nothing');
});

t.test('the OpenAPI document describes the route, its body and its answer', async (t) => {
  const h = await webhookHarness(t);
  const document = (await (await h.request('/openapi.json')).json()) as {
    paths: Record<string, Record<string, Record<string, unknown>>>;
  };
  const operation = document.paths['/v1/webhooks/{id}/replay']?.post as
    { operationId: string; requestBody: unknown; responses: Record<string, unknown>; description: string } | undefined;
  t.ok(operation, 'the route is documented');
  t.equal(operation!.operationId, 'replayWebhookEvents');
  t.ok(operation!.requestBody, 'with its body');
  t.ok(operation!.responses['202'], 'its answer');
  for (const status of ['400', '404', '409', '429']) t.ok(operation!.responses[status], `and its ${status}`);
  t.match(operation!.description, /10,000/, 'the cap is stated');
});

t.test('a window of more than 10,000 deliveries is refused whole; a narrower one is queued', async (t) => {
  t.setTimeout(300_000);
  const h = await webhookHarness(t);
  const endpoint = await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] });
  const since = new Date(Date.now() - 1000);
  // Two transactions of one stream: 5,001 events, then 5,000 a moment later (no delivery worker: they stay queued).
  const stream = `webhook-test-resource-${endpoint.id}`;
  const times: Date[] = [];
  for (const n of [5_001, REPLAY_MAX_DELIVERIES - 5_000]) {
    await sleep(5);
    const now = h.services.now();
    times.push(now);
    const context = {
      tenantId: h.ws.workspace.id,
      sandbox: false,
      metadata: { actor: { type: 'system' as const, name: 'replay cap test' }, correlation_id: 'replay-cap' },
      now,
    };
    await runCommand(h.services.store, context, [stream], (tx) =>
      tx.append(
        stream,
        'any',
        Array.from({ length: n }, () => ({ type: 'document.uploaded', data: { payload: resourcePayload() } })),
      ),
    );
  }
  await fanOutBatch(h.pool, h.services.personalData, h.services.now());
  await waitFor(
    async () => {
      await fanOutBatch(h.pool, h.services.personalData, h.services.now(), 2000);
      const made = await h.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1',
        [endpoint.id],
      );
      return made.rows[0]!.n > REPLAY_MAX_DELIVERIES || undefined;
    },
    'the fan-out made every delivery',
    PATIENCE_MS,
  );

  const refused = await replay(h, endpoint.id, { since: since.toISOString() });
  t.equal(refused.status, 400);
  const body = (await refused.json()) as Refused;
  t.equal(body.error, 'replay_too_large');
  t.match(body.message, /10,000/, 'the cap is said');
  t.equal((await resendsOf(h, endpoint.id)).length, 0, 'nothing queued');

  const narrower = await replay(h, endpoint.id, { since: since.toISOString(), until: times[1]!.toISOString() });
  t.equal(narrower.status, 202, 'the first transaction’s events alone');
  t.equal(((await narrower.json()) as Summary).queued, 5_001);
  t.equal((await resendsOf(h, endpoint.id)).length, 5_001);
});

t.test('only_failed replays the events whose deliveries failed, once each until they succeed', async (t) => {
  const h = await webhookHarness(t);
  let down = true;
  h.receiver.reply = (r) =>
    down && r.body.includes('"document.rejected"') ? { status: 503, body: 'down' } : { status: 200, body: 'ok' };
  const endpoint = await h.createEndpoint({
    url: h.receiver.url(),
    events: ['document.uploaded', 'document.rejected'],
  });
  await h.startWorkers();
  const since = new Date(Date.now() - 1000).toISOString();
  const failing = [];
  for (const kind of ['document.rejected', 'document.uploaded', 'document.rejected']) {
    const event = await h.appendEvent(kind, resourcePayload());
    if (kind === 'document.rejected') failing.push(event.id);
  }
  await waitFor(
    async () => {
      const tried = await h.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND attempts > 0 AND status <> 'succeeded'",
        [endpoint.id],
      );
      return tried.rows[0]!.n === 2 || undefined;
    },
    'the two document.rejected deliveries failed their first attempt',
    PATIENCE_MS,
  );
  down = false;
  const first = await replay(h, endpoint.id, { since, only_failed: true });
  t.equal(first.status, 202);
  t.match(await first.json(), { queued: 2, only_failed: true });
  t.same(
    (await resendsOf(h, endpoint.id)).map((d) => d.event_id),
    failing,
    'the failed events, in order; the delivered one is not sent again',
  );
  await waitFor(
    async () => {
      const done = await h.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND resend_of IS NOT NULL AND status = 'succeeded'",
        [endpoint.id],
      );
      return done.rows[0]!.n === 2 || undefined;
    },
    'the replayed deliveries succeed',
    PATIENCE_MS,
  );
  const second = await replay(h, endpoint.id, { since, only_failed: true });
  t.match(await second.json(), { queued: 0 }, 'nothing failed any more');
});
