import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { resourcePayload, webhookHarness, type Harness } from './support/harness.js';
import { waitFor, type ReceivedRequest } from './support/receiver.js';

// Payload versions: two endpoints on two versions at HTTPS receivers on loopback get the two shapes of the
// same event, both signed; upgrading one changes only its next deliveries; a resend keeps its delivery's version; the
// Events API answers in the version a request names, else the workspace's default.

const V1 = '2026-11-22';
const V2 = '2026-11-29';

/** The body verified by the Standard Webhooks library with the endpoint's secret, parsed. */
function verified(request: ReceivedRequest, secret: string): Record<string, unknown> {
  return new Webhook(secret).verify(request.body, {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  }) as Record<string, unknown>;
}

const at = (h: Harness, eventId: string, path: string) =>
  waitFor(() => h.receiver.forEvent(eventId).find((r) => r.path === path), `${eventId} reaches ${path}`);

t.test(
  'two endpoints on two versions receive two shapes of one event; an upgrade changes only that endpoint',
  async (t) => {
    const h = await webhookHarness(t);
    const events = ['document.uploaded'];
    const old = await h.createEndpoint({ url: h.receiver.url('localhost', '/old'), events, payload_version: V1 });
    const current = await h.createEndpoint({ url: h.receiver.url('localhost', '/new'), events });
    t.equal(old.payload_version, V1, 'an endpoint may be created on an older version');
    t.equal(current.payload_version, V2, 'a new endpoint is on the current version');
    await h.startWorkers();

    const stream = `webhook-test-resource-${crypto.randomUUID()}`;
    const resourceId = stream.slice('webhook-test-resource-'.length);
    const first = await h.appendEvent('document.uploaded', resourcePayload('first.pdf'), { stream });
    const [toOld, toNew] = [await at(h, first.id, '/old'), await at(h, first.id, '/new')];
    const oldBody = verified(toOld, old.secret);
    const newBody = verified(toNew, current.secret);
    const common = {
      id: first.id,
      event: 'document.uploaded',
      tenant_id: h.ws.workspace.id,
      created_at: first.createdAt.toISOString(),
    };
    t.same(Object.keys(oldBody), ['id', 'event', 'tenant_id', 'created_at', 'data'], 'version 1 is the spec envelope');
    t.same(oldBody, { ...common, data: first.data.payload });
    t.same(
      newBody,
      {
        ...common,
        payload_version: V2,
        resource: { type: 'document', id: resourceId, version: 1 },
        data: first.data.payload,
      },
      'version 2 adds its name and the resource with its version',
    );

    // The old endpoint is upgraded; an event after that reaches it in the new shape, the other endpoint as before.
    const upgrade = await h.request(`/v1/webhooks/${old.id}`, {
      method: 'PATCH',
      key: h.ws.live,
      json: { payload_version: V2 },
    });
    t.equal(upgrade.status, 200);
    t.match(await upgrade.json(), { id: old.id, payload_version: V2 });
    const second = await h.appendEvent('document.uploaded', resourcePayload('second.pdf'), { stream });
    const afterOld = verified(await at(h, second.id, '/old'), old.secret);
    const afterNew = verified(await at(h, second.id, '/new'), current.secret);
    t.same(afterOld.resource, { type: 'document', id: resourceId, version: 2 }, 'the upgraded endpoint gets version 2');
    t.same(afterOld, afterNew, 'both endpoints now get the same shape');
    const listed = (await h.request('/v1/webhooks', { key: h.ws.live }).then((r) => r.json())) as {
      data: { id: string; payload_version: string }[];
    };
    t.same(
      listed.data.map((e) => [e.id, e.payload_version]),
      [
        [old.id, V2],
        [current.id, V2],
      ],
    );

    // What the old endpoint was sent before the upgrade keeps its version, in the log and when resent.
    const log = await waitFor(async () => {
      const r = await h.request(`/v1/webhooks/${old.id}/deliveries`, { key: h.ws.live });
      const body = (await r.json()) as {
        data: { event_id: string; state: string; payload_version: string; retry_schedule_seconds: number[] }[];
      };
      return body.data.length === 2 && body.data.every((d) => d.state === 'succeeded') ? body.data : undefined;
    }, 'both deliveries are acknowledged');
    t.same(
      log.map((d) => [d.event_id, d.payload_version]),
      [
        [first.id, V1],
        [second.id, V2],
      ],
      'each delivery says its version',
    );
    t.same(log[0]!.retry_schedule_seconds, [60, 300, 1800, 7200, 21600, 86400], 'and the retry schedule');
    const deliveryId = (
      await h.pool.query<{ id: string }>(
        'SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 AND event_id = $2 AND resend_of IS NULL',
        [old.id, first.id],
      )
    ).rows[0]!.id;
    const resend = await h.admin('POST', `/webhooks/${old.id}/deliveries/${deliveryId}/resend`);
    t.equal(resend.status, 201);
    await waitFor(
      () => h.receiver.forEvent(first.id).filter((r) => r.path === '/old').length === 2,
      'the resend arrives',
    );
    const resent = h.receiver.forEvent(first.id).filter((r) => r.path === '/old')[1]!;
    t.equal(resent.body, toOld.body, 'a resend keeps the version (and bytes) of the delivery it resends');
    t.same(verified(resent, old.secret), oldBody);

    const asked = await h.admin('POST', `/webhooks/${old.id}/deliveries/${deliveryId}/resend`, { payload_version: V2 });
    t.equal(asked.status, 201);
    await waitFor(
      () => h.receiver.forEvent(first.id).filter((r) => r.path === '/old').length === 3,
      'the second resend',
    );
    const inNew = h.receiver.forEvent(first.id).filter((r) => r.path === '/old')[2]!;
    t.same(verified(inNew, old.secret), newBody, 'a resend asked for another version is rendered in it');
  },
);

t.test('the Events API answers in the version the header names, else the workspace default', async (t) => {
  const h = await webhookHarness(t);
  const event = await h.appendEvent('document.uploaded', resourcePayload());
  const get = (path: string, version?: string) =>
    h.request(path, { key: h.ws.live, headers: version ? { 'visa-crm-version': version } : {} });

  const v1 = await get(`/v1/events/${event.id}`, V1);
  t.equal(v1.status, 200);
  t.equal(v1.headers.get('visa-crm-version'), V1, 'the answer says its version');
  const v1Body = (await v1.json()) as Record<string, unknown>;
  t.same(Object.keys(v1Body), ['id', 'event', 'tenant_id', 'created_at', 'data']);

  const v2 = await get(`/v1/events/${event.id}`, V2);
  t.equal(v2.headers.get('visa-crm-version'), V2);
  const v2Body = (await v2.json()) as Record<string, unknown>;
  t.match(v2Body, { id: event.id, payload_version: V2, resource: { type: 'document', version: 1 } });

  const plain = await get(`/v1/events/${event.id}`);
  t.equal(plain.headers.get('visa-crm-version'), V2, 'a new workspace defaults to the current version');
  t.same(await plain.json(), v2Body);

  for (const version of [V1, V2]) {
    const list = await get('/v1/events', version);
    t.equal(list.headers.get('visa-crm-version'), version);
    const page = (await list.json()) as { data: Record<string, unknown>[] };
    t.same(
      page.data.find((e) => e.id === event.id),
      version === V1 ? v1Body : v2Body,
      `the list in ${version}`,
    );
  }

  const bad = await get(`/v1/events/${event.id}`, '2025-01-01');
  t.equal(bad.status, 400, 'an unknown version is refused');
  t.match(await bad.json(), { error: 'validation_failed' });

  // A workspace stored before versions existed (no setting) answers in the first version.
  await h.pool.query(
    "UPDATE workspaces SET settings = settings - 'payload_version', revision = revision + 1 WHERE id = $1",
    [h.ws.workspace.id],
  );
  const older = await waitFor(async () => {
    const r = await get(`/v1/events/${event.id}`);
    return r.headers.get('visa-crm-version') === V1 ? r : undefined;
  }, 'the workspace without a setting answers in version 1');
  t.same(await older.json(), v1Body);
});

t.test('the changelog page lists every version and is linked from nothing private', async (t) => {
  const h = await webhookHarness(t);
  const page = await h.request('/docs/payload-versions');
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /text\/html/);
  t.match(page.headers.get('content-security-policy'), /default-src 'none'/);
  const text = await page.text();
  t.match(text, /2026-11-29 \(current\)/);
  t.match(text, /2026-11-22/);
  t.match(text, /<code>resource<\/code>/);
});
