import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { TestClock } from '../support/app.js';
import { purgeDeliveries } from '../../src/webhooks/deliveries.js';
import { DELIVERY_TIMEOUT_MS } from '../../src/webhooks/delivery-client.js';
import { RETRY_DELAYS_MS } from '../../src/webhooks/retry-schedule.js';
import { verifyWebhook } from '../../src/webhooks/verify.js';
import { resourcePayload, webhookHarness } from './support/harness.js';
import { hmacHex, signatureParts, sleep, waitFor, type ReceivedRequest } from './support/receiver.js';

interface DeliveryRow {
  id: string;
  status: string;
  attempts: number;
  next_attempt_at: Date | null;
}

async function deliveryOf(pool: import('pg').Pool, eventId: string): Promise<DeliveryRow | undefined> {
  return (
    await pool.query<DeliveryRow>(
      'SELECT id, status, attempts, next_attempt_at FROM webhook_deliveries WHERE event_id = $1 AND resend_of IS NULL',
      [eventId],
    )
  ).rows[0];
}

t.test(
  'a delivery is the signed envelope with the spec and Standard Webhooks headers; only subscribed kinds of the same mode',
  async (t) => {
    const h = await webhookHarness(t);
    const before = await h.appendEvent('document.uploaded', resourcePayload('Before Endpoint'));
    // On the first payload version, whose envelope is the spec's (test/webhooks/payload-versions.test.ts: the others).
    const live = await h.createEndpoint({
      url: h.receiver.url('localhost', '/live'),
      events: ['document.uploaded'],
      payload_version: '2026-11-22',
    });
    const test = await h.createEndpoint(
      { url: h.receiver.url('hooks.test', '/test'), events: ['document.uploaded', 'document.rejected'] },
      h.ws.test,
    );
    await h.startWorkers();

    const payload = resourcePayload();
    const event = await h.appendEvent('document.uploaded', payload);
    const internal = await h.appendEvent('document.scanned', null);
    const unsubscribed = await h.appendEvent('document.rejected', resourcePayload());
    const sandboxEvent = await h.appendEvent('document.rejected', resourcePayload('Sandbox Lead'), { sandbox: true });
    const marker = await h.appendEvent('document.uploaded', resourcePayload('Marker'));

    await waitFor(
      // Deliveries to one endpoint go out concurrently, so the marker may arrive before the event: wait for both.
      () =>
        h.receiver.forEvent(marker.id).length === 1 &&
        h.receiver.forEvent(event.id).length === 1 &&
        h.receiver.forEvent(sandboxEvent.id).length === 1,
      'deliveries arrive',
    );
    const [request] = h.receiver.forEvent(event.id);
    t.ok(request, 'the live event reached the live endpoint');
    const r = request!;
    t.equal(r.method, 'POST');
    t.equal(r.path, '/live');
    t.equal(r.headers['content-type'], 'application/json');
    t.equal(r.headers['user-agent'], 'Service-Webhooks/1.0');
    t.equal(r.headers['x-service-event'], 'document.uploaded');
    const delivery = await waitFor(async () => {
      const d = await deliveryOf(h.pool, event.id);
      return d?.status === 'succeeded' ? d : undefined;
    }, 'the acknowledgement is recorded');
    t.equal(r.headers['x-service-delivery'], delivery.id, 'X-Service-Delivery is the delivery id');

    const envelope = JSON.parse(r.body) as Record<string, unknown>;
    t.same(
      envelope,
      {
        id: event.id,
        event: 'document.uploaded',
        tenant_id: h.ws.workspace.id,
        created_at: event.createdAt.toISOString(),
        data: payload,
      },
      'the envelope carries exactly the stored payload',
    );
    t.same(Object.keys(envelope), ['id', 'event', 'tenant_id', 'created_at', 'data']);

    t.match(
      r.headers['x-service-signature'],
      /^t=\d+,v1=[0-9a-f]{64}$/,
      'X-Service-Signature has the form t=...,v1=...',
    );
    const sig = signatureParts(r);
    t.same(
      sig.v1,
      [hmacHex(live.secret, `${sig.t}.${r.body}`)],
      'v1 is the HMAC-SHA256 of "<t>.<raw body>" under the endpoint secret',
    );
    t.ok(Math.abs(Number(sig.t) - Date.now() / 1000) < 300, 't is the sending time');
    t.match(verifyWebhook({ body: r.body, signature: r.headers['x-service-signature'], secret: live.secret }), {
      id: event.id,
    });

    t.equal(r.headers['webhook-id'], event.id, 'webhook-id is the event id');
    t.equal(r.headers['webhook-timestamp'], sig.t);
    const standard = new Webhook(live.secret).verify(r.body, {
      'webhook-id': String(r.headers['webhook-id']),
      'webhook-timestamp': String(r.headers['webhook-timestamp']),
      'webhook-signature': String(r.headers['webhook-signature']),
    });
    t.match(
      standard,
      { id: event.id },
      'the Standard Webhooks library verifies the same delivery with the same secret',
    );

    const sandboxRequest = h.receiver.forEvent(sandboxEvent.id);
    t.equal(sandboxRequest.length, 1);
    t.equal(sandboxRequest[0]!.path, '/test', 'the sandbox event went to the test endpoint only');
    t.same(signatureParts(sandboxRequest[0]!).v1, [
      hmacHex(test.secret, `${signatureParts(sandboxRequest[0]!).t}.${sandboxRequest[0]!.body}`),
    ]);
    t.equal(h.receiver.forEvent(unsubscribed.id).length, 0, 'an unsubscribed kind is not delivered');
    t.equal(h.receiver.forEvent(event.id).length, 1, 'the live event did not go to the test endpoint');
    const recorded = await h.pool.query<{ event_id: string }>(
      'SELECT event_id FROM webhook_deliveries WHERE event_id = ANY($1)',
      [[internal.id, unsubscribed.id, before.id]],
    );
    t.same(
      recorded.rows,
      [],
      'no delivery for an internal event, an unsubscribed kind, or an event older than the endpoint',
    );
  },
);

t.test(
  'retries follow 1 min, 5 min, 30 min, 2 h, 6 h, 24 h on a controllable clock, then the delivery fails',
  async (t) => {
    const clock = new TestClock(new Date());
    const h = await webhookHarness(t, { now: clock.now });
    h.receiver.reply = () => ({ status: 500, body: 'down' });
    await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] });
    // The jitter's midpoint: the schedule's centre (the jitter's bounds have their own test).
    await h.startWorkers({ random: () => 0.5 });
    const event = await h.appendEvent('document.uploaded', resourcePayload());
    await waitFor(() => h.receiver.forEvent(event.id).length === 1, 'first attempt');
    for (let i = 0; i < RETRY_DELAYS_MS.length; i++) {
      const row = await waitFor(
        async () => {
          const d = await deliveryOf(h.pool, event.id);
          return d && d.attempts === i + 1 ? d : undefined;
        },
        `attempt ${i + 1} recorded`,
      );
      t.equal(row.status, 'pending');
      t.equal(
        row.next_attempt_at?.getTime(),
        clock.now().getTime() + RETRY_DELAYS_MS[i]!,
        `retry ${i + 1} is scheduled ${RETRY_DELAYS_MS[i]! / 60000} min after attempt ${i + 1}`,
      );
      clock.advance(RETRY_DELAYS_MS[i]! - 1000);
      await sleep(150);
      t.equal(h.receiver.forEvent(event.id).length, i + 1, 'nothing is sent before the retry is due');
      clock.advance(1000);
      await waitFor(() => h.receiver.forEvent(event.id).length === i + 2, `attempt ${i + 2} sent`);
    }
    const final = await waitFor(async () => {
      const d = await deliveryOf(h.pool, event.id);
      return d && d.status !== 'pending' ? d : undefined;
    }, 'the delivery settles');
    t.equal(final.status, 'failed', 'after the 24 h retry fails the delivery is failed');
    t.equal(final.attempts, 7);
    t.equal(final.next_attempt_at, null);
    const requests = h.receiver.forEvent(event.id);
    t.equal(
      new Set(requests.map((r) => r.headers['x-service-delivery'])).size,
      1,
      'every attempt has the same delivery id',
    );
    t.equal(new Set(requests.map((r) => r.body)).size, 1, 'and the same body');
    t.equal(new Set(requests.map((r) => signatureParts(r).t)).size, 7, 'each attempt is signed at its own time');
    clock.advance(48 * 3600_000);
    await sleep(150);
    t.equal(h.receiver.forEvent(event.id).length, 7, 'a failed delivery is not tried again');
  },
);

t.test('redirects and timeouts are failures; the delivery log keeps requests and bounded responses', async (t) => {
  const h = await webhookHarness(t);
  t.equal(DELIVERY_TIMEOUT_MS, 10_000, 'the delivery timeout is 10 s');
  h.receiver.reply = (request) => {
    if (request.path === '/redirect')
      return { status: 302, headers: { location: h.receiver.url('127.0.0.1', '/elsewhere') } };
    if (request.path === '/slow') return 'hang';
    if (request.path === '/chatty') return { status: 200, body: 'x'.repeat(10_000) };
    return { status: 200 };
  };
  const redirect = await h.createEndpoint({
    url: h.receiver.url('127.0.0.1', '/redirect'),
    events: ['document.uploaded'],
  });
  const slow = await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/slow'), events: ['document.uploaded'] });
  const chatty = await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/chatty'), events: ['document.uploaded'] });
  await h.startWorkers({ deliveryTimeoutMs: 300 });
  const event = await h.appendEvent('document.uploaded', resourcePayload());

  const logOf = async (endpointId: string) => {
    const response = await h.admin('GET', `/webhooks/${endpointId}/deliveries`);
    t.equal(response.status, 200);
    return (
      (await response.json()) as {
        data: { status: string; attempts: number; request_body: string; log: Record<string, unknown>[] }[];
      }
    ).data;
  };
  const settled = (id: string) =>
    waitFor(async () => {
      const log = await logOf(id);
      return log[0] && log[0].attempts === 1 ? log[0] : undefined;
    }, 'first attempt logged');

  const redirected = await settled(redirect.id);
  t.equal(redirected.status, 'pending', 'a redirect is a failure, retried later');
  t.match(redirected.log[0], { attempt: 1, response_status: 302, error: /redirect.*not followed/ });
  t.equal(h.receiver.requests.filter((r) => r.path === '/elsewhere').length, 0, 'the redirect was not followed');

  const timedOut = await settled(slow.id);
  t.equal(timedOut.status, 'pending', 'a timeout is a failure');
  t.match(timedOut.log[0], { response_status: null, error: /no answer within/ });

  const ok = await settled(chatty.id);
  t.equal(ok.status, 'succeeded');
  const entry = ok.log[0] as {
    request_headers: Record<string, string>;
    response_headers: Record<string, string>;
    response_body: string;
    duration_ms: number;
  };
  t.equal(entry.response_body.length, 4096, 'the logged response body is bounded');
  t.equal(entry.response_headers['content-type'], 'text/plain', 'response headers are logged');
  t.equal(entry.request_headers['x-service-event'], 'document.uploaded', 'request headers are logged');
  t.match(entry.request_headers['x-service-signature'], /^t=\d+,v1=/);
  t.ok(entry.duration_ms >= 0, 'the timing is logged');
  t.equal(JSON.parse(ok.request_body).id, event.id, 'the request body is logged');

  const failures = await h.request('/v1/webhooks', { key: h.ws.live });
  const counts = Object.fromEntries(
    ((await failures.json()) as { data: { id: string; consecutive_failures: number }[] }).data.map((e) => [
      e.id,
      e.consecutive_failures,
    ]),
  );
  t.same(
    counts,
    { [redirect.id]: 1, [slow.id]: 1, [chatty.id]: 0 },
    'consecutive_failures counts failed attempts per endpoint',
  );
});

t.test(
  'SSRF at delivery: a name that now resolves inside is refused without connecting; delivery connects to the checked address',
  async (t) => {
    const h = await webhookHarness(t);
    h.resolver.table.set('rebind.test', ['127.0.0.1']);
    const rebind = await h.createEndpoint({
      url: h.receiver.url('rebind.test', '/rebind'),
      events: ['document.uploaded'],
    });
    // hooks.test is known only to the injected resolver: the connection can only have used the checked address.
    const pinned = await h.createEndpoint({
      url: h.receiver.url('hooks.test', '/pinned'),
      events: ['document.uploaded'],
    });
    h.resolver.table.set('rebind.test', ['10.20.30.40']);
    await h.startWorkers();
    const event = await h.appendEvent('document.uploaded', resourcePayload());
    await waitFor(() => h.receiver.requests.some((r) => r.path === '/pinned'), 'the pinned delivery arrives');
    const log = await waitFor(async () => {
      const data = (
        (await (await h.admin('GET', `/webhooks/${rebind.id}/deliveries`)).json()) as {
          data: { attempts: number; log: { error: string; response_status: number | null }[] }[];
        }
      ).data;
      return data[0]?.attempts === 1 ? data[0] : undefined;
    }, 'the refused attempt is logged');
    t.match(log.log[0], { response_status: null, error: /refused: .*10\.20\.30\.40 is in the private IPv4 range/ });
    t.equal(
      h.receiver.requests.filter((r) => r.path === '/rebind').length,
      0,
      'nothing reached the receiver for the rebound name',
    );
    t.equal(h.receiver.forEvent(event.id).length, 1);
    void pinned;
  },
);

t.test(
  '50 failures in a row pause the endpoint and notify the owners; paused endpoints keep events; resume sends them',
  async (t) => {
    const h = await webhookHarness(t);
    let healthy = false;
    h.receiver.reply = () => (healthy ? { status: 204 } : { status: 503 });
    const endpoint = await h.createEndpoint({
      url: h.receiver.url(),
      events: ['document.uploaded', 'document.rejected'],
    });
    await h.startWorkers({ concurrency: 4 });
    const events = [];
    for (let i = 0; i < 50; i++) events.push(await h.appendEvent('document.uploaded', resourcePayload(`Lead ${i}`)));
    const paused = await waitFor(async () => {
      const list = (
        (await (await h.request('/v1/webhooks', { key: h.ws.live })).json()) as { data: Record<string, unknown>[] }
      ).data;
      return list[0]?.status === 'paused' ? list[0] : undefined;
    }, 'the endpoint is paused');
    t.ok(Number(paused.consecutive_failures) >= 50, 'at least 50 failures in a row');
    t.match(paused, { paused_reason: /failed in a row/, paused_at: /^\d{4}-\d\d-\d\dT/ });
    const notes = await h.pool.query<{ recipient: string; kind: string; subject: string }>(
      'SELECT recipient, kind, subject FROM webhook_notifications WHERE endpoint_id = $1',
      [endpoint.id],
    );
    t.same(
      notes.rows.map((n) => [n.recipient, n.kind]),
      [['asha@northstar.example', 'webhook_endpoint_paused']],
      'the one active owner is notified, once',
    );

    const whilePaused = await h.appendEvent('document.rejected', resourcePayload('While Paused'));
    const held = await waitFor(() => deliveryOf(h.pool, whilePaused.id), 'a delivery is recorded while paused');
    await sleep(200);
    t.equal(held.attempts, 0, 'it is held, not attempted');
    t.equal(h.receiver.forEvent(whilePaused.id).length, 0, 'nothing new is sent to a paused endpoint');

    const firstLog = (
      (await (await h.admin('GET', `/webhooks/${endpoint.id}/deliveries?limit=100`)).json()) as {
        data: { id: string; event_id: string }[];
      }
    ).data;
    const resend = await h.admin('POST', `/webhooks/${endpoint.id}/deliveries/${firstLog.at(-1)!.id}/resend`);
    t.equal(resend.status, 201);
    const resent = (await resend.json()) as { id: string };
    const test = await h.admin('POST', `/webhooks/${endpoint.id}/test`);
    const { event_id: testEventId } = (await test.json()) as { event_id: string };
    await waitFor(() => h.receiver.forEvent(testEventId).length === 1, 'webhook.test is sent even while paused');
    const resentRow = await h.pool.query<{ attempts: number }>(
      'SELECT attempts FROM webhook_deliveries WHERE id = $1',
      [resent.id],
    );
    t.equal(resentRow.rows[0]!.attempts, 0, 'a resend to a paused endpoint waits for the resume');

    healthy = true;
    const resumed = await h.admin('POST', `/webhooks/${endpoint.id}/resume`);
    t.equal(resumed.status, 200);
    t.match(await resumed.json(), {
      status: 'active',
      consecutive_failures: 0,
      paused_reason: null,
      paused_at: null,
      mode: 'live',
    });
    await waitFor(async () => {
      const rows = await h.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'succeeded'",
        [endpoint.id],
      );
      return rows.rows[0]!.n === 53;
    }, 'every held, resent and retried delivery is sent after the resume');
    t.equal(
      h.receiver.forEvent(whilePaused.id).at(-1)?.headers['webhook-id'],
      whilePaused.id,
      'the event that came while paused is delivered',
    );
    const list = (
      (await (await h.request('/v1/webhooks', { key: h.ws.live })).json()) as { data: Record<string, unknown>[] }
    ).data;
    t.equal(list[0]!.consecutive_failures, 0, 'success resets the count');
  },
);

t.test(
  'resend keeps the event id; rotation signs with both secrets for 24 h; webhook.test goes to that endpoint; purge after 30 days',
  async (t) => {
    const clock = new TestClock(new Date());
    const h = await webhookHarness(t, { now: clock.now });
    const endpoint = await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/a'), events: ['document.uploaded'] });
    const other = await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/b'), events: ['document.uploaded'] });
    await h.startWorkers();
    const event = await h.appendEvent('document.uploaded', resourcePayload());
    await waitFor(() => h.receiver.forEvent(event.id).length === 2, 'delivered to both endpoints');

    const log = (
      (await (await h.admin('GET', `/webhooks/${endpoint.id}/deliveries`)).json()) as {
        data: { id: string; status: string }[];
      }
    ).data;
    t.equal(log.length, 1);
    const resend = await h.admin('POST', `/webhooks/${endpoint.id}/deliveries/${log[0]!.id}/resend`);
    t.equal(resend.status, 201);
    const resent = (await resend.json()) as { id: string; event_id: string };
    t.equal(resent.event_id, event.id, 'the resend keeps the event id');
    t.not(resent.id, log[0]!.id, 'and gets a new delivery id');
    await waitFor(
      () => h.receiver.forEvent(event.id).filter((r) => r.path === '/a').length === 2,
      'the resend arrives',
    );
    const [first, second] = h.receiver.forEvent(event.id).filter((r) => r.path === '/a');
    t.equal(second!.headers['x-service-delivery'], resent.id);
    t.equal(second!.body, first!.body, 'the resent body is byte for byte the first one');
    const unknown = await h.admin('POST', `/webhooks/${other.id}/deliveries/${log[0]!.id}/resend`);
    t.equal(unknown.status, 404, 'a delivery of another endpoint is not found under this one');

    const rotation = await h.admin('POST', `/webhooks/${endpoint.id}/rotate-secret`);
    t.equal(rotation.status, 200);
    const rotated = (await rotation.json()) as { secret: string; endpoint: { previous_secret_valid_until: string } };
    t.match(rotated.secret, /^whsec_[A-Za-z0-9]{32}$/);
    t.not(rotated.secret, endpoint.secret);
    t.equal(
      rotated.endpoint.previous_secret_valid_until,
      new Date(clock.now().getTime() + 24 * 3600_000).toISOString(),
      'previous_secret_valid_until is 24 h ahead',
    );
    const during = await h.appendEvent('document.uploaded', resourcePayload('During Overlap'));
    await waitFor(() => h.receiver.forEvent(during.id).some((r) => r.path === '/a'), 'delivered during the overlap');
    const overlapRequest = h.receiver.forEvent(during.id).find((r) => r.path === '/a')!;
    const sig = signatureParts(overlapRequest);
    t.same(
      sig.v1,
      [
        hmacHex(rotated.secret, `${sig.t}.${overlapRequest.body}`),
        hmacHex(endpoint.secret, `${sig.t}.${overlapRequest.body}`),
      ],
      'two v1 values: the new secret, then the old',
    );
    const now = clock.now();
    t.ok(
      verifyWebhook({
        body: overlapRequest.body,
        signature: overlapRequest.headers['x-service-signature'],
        secret: endpoint.secret,
        now,
      }),
      'a receiver still on the old secret verifies',
    );
    t.ok(
      verifyWebhook({
        body: overlapRequest.body,
        signature: overlapRequest.headers['x-service-signature'],
        secret: rotated.secret,
        now,
      }),
      'a receiver on the new secret verifies',
    );
    const headers = (r: ReceivedRequest) => ({
      'webhook-id': String(r.headers['webhook-id']),
      'webhook-timestamp': String(r.headers['webhook-timestamp']),
      'webhook-signature': String(r.headers['webhook-signature']),
    });
    t.equal(
      String(overlapRequest.headers['webhook-signature']).split(' ').length,
      2,
      'webhook-signature carries two signatures too',
    );
    for (const secret of [endpoint.secret, rotated.secret])
      t.ok(
        new Webhook(secret).verify(overlapRequest.body, headers(overlapRequest)),
        'Standard Webhooks verifies with either secret',
      );

    clock.advance(24 * 3600_000 + 1000);
    const after = await h.appendEvent('document.uploaded', resourcePayload('After Overlap'));
    await waitFor(() => h.receiver.forEvent(after.id).some((r) => r.path === '/a'), 'delivered after the overlap');
    const afterRequest = h.receiver.forEvent(after.id).find((r) => r.path === '/a')!;
    t.equal(signatureParts(afterRequest).v1.length, 1, 'after 24 h only the new secret signs');
    const listed = (
      (await (await h.request('/v1/webhooks', { key: h.ws.live })).json()) as {
        data: { id: string; previous_secret_valid_until: string | null }[];
      }
    ).data;
    t.equal(
      listed.find((e) => e.id === endpoint.id)!.previous_secret_valid_until,
      null,
      'previous_secret_valid_until is null once the overlap ended',
    );

    const test = await h.admin('POST', `/webhooks/${endpoint.id}/test`);
    t.equal(test.status, 202);
    const { event_id: testEventId } = (await test.json()) as { event_id: string };
    await waitFor(() => h.receiver.forEvent(testEventId).length === 1, 'webhook.test arrives');
    const testRequest = h.receiver.forEvent(testEventId)[0]!;
    t.equal(
      testRequest.path,
      '/a',
      'webhook.test goes to that endpoint only, though it does not subscribe to webhook.test',
    );
    t.equal(testRequest.headers['x-service-event'], 'webhook.test');
    t.match(JSON.parse(testRequest.body), {
      id: testEventId,
      event: 'webhook.test',
      tenant_id: h.ws.workspace.id,
      data: { id: endpoint.id, url: h.receiver.url('127.0.0.1', '/a'), status: 'active' },
    });
    t.notOk(testRequest.body.includes('whsec_'), 'the test payload carries no secret');

    clock.advance(31 * 24 * 3600_000);
    const purged = await purgeDeliveries(h.pool, clock.now());
    t.ok(purged.purged >= 6, 'entries older than 30 days are purged');
    const empty = ((await (await h.admin('GET', `/webhooks/${endpoint.id}/deliveries`)).json()) as { data: unknown[] })
      .data;
    t.same(empty, [], 'the delivery log is empty afterwards');
    const attempts = await h.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_delivery_attempts');
    t.equal(attempts.rows[0]!.n, 0, 'with their attempts');
  },
);

t.test('deleting an endpoint cancels what waits for it', async (t) => {
  const clock = new TestClock(new Date());
  const h = await webhookHarness(t, { now: clock.now });
  h.receiver.reply = () => ({ status: 500 });
  const endpoint = await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] });
  await h.startWorkers();
  const event = await h.appendEvent('document.uploaded', resourcePayload());
  await waitFor(async () => (await deliveryOf(h.pool, event.id))?.attempts === 1, 'first attempt');
  const del = await h.request(`/v1/webhooks/${endpoint.id}`, { method: 'DELETE', key: h.ws.live });
  t.equal(del.status, 204);
  t.equal((await deliveryOf(h.pool, event.id))!.status, 'cancelled');
  clock.advance(RETRY_DELAYS_MS[0]);
  await sleep(150);
  t.equal(h.receiver.forEvent(event.id).length, 1, 'no retry goes to a deleted endpoint');
  const admin = await h.admin('GET', `/webhooks/${endpoint.id}/deliveries`);
  t.equal(admin.status, 404);
});
