import t from 'tap';
import { TestClock } from '../support/app.js';
import { leadBody } from '../leads/helpers.js';
import { resourcePayload, webhookHarness, type Harness } from './support/harness.js';
import { waitFor } from './support/receiver.js';

// The Events API: a workspace's webhook events exactly as their deliveries carry them, newest or oldest first,
// cursor-paged, filtered by kind and time, in the key's mode, for 30 days.

interface Page {
  data: { id: string; event: string; tenant_id: string; created_at: string; data: Record<string, unknown> }[];
  has_more: boolean;
  next_cursor: string | null;
}

async function get(
  h: Harness,
  path: string,
  key = h.ws.live,
): Promise<{ status: number; body: Page & Record<string, unknown>; text: string }> {
  const response = await h.request(path, { key });
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) as Page & Record<string, unknown>, text };
}

/**
 * Oldest-first pages read only below the oldest transaction still running in the whole cluster, so another test
 * file's open write transaction holds them back for a while: wait until every event stored here is below it.
 */
async function settled(h: Harness): Promise<void> {
  await waitFor(
    async () =>
      (
        await h.pool.query<{ below: boolean }>(
          'SELECT pg_snapshot_xmin(pg_current_snapshot()) > (SELECT max(tx_id) FROM events) AS below',
        )
      ).rows[0]!.below,
    'every stored event below the oldest running transaction',
    60_000,
  );
}

async function allPages(h: Harness, query: string, key = h.ws.live): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 50; i++) {
    const page = await get(h, `/v1/events?${query}${cursor ? `&cursor=${cursor}` : ''}`, key);
    if (page.status !== 200) throw new Error(`${page.status} ${page.text}`);
    ids.push(...page.body.data.map((e) => e.id));
    cursor = page.body.next_cursor;
    if (!cursor) return ids;
  }
  throw new Error('more than 50 pages');
}

t.test('lists webhook events newest or oldest first, paged, by kind and prefix, in the key’s mode', async (t) => {
  const h = await webhookHarness(t);
  const uploaded = [];
  for (let i = 0; i < 5; i++) uploaded.push(await h.appendEvent('document.uploaded', resourcePayload(`up-${i}`)));
  const rejected = await h.appendEvent('document.rejected', resourcePayload('rejected'));
  const internal = await h.appendEvent('document.scanned', null);
  const sandbox = await h.appendEvent('document.uploaded', resourcePayload('sandbox'), { sandbox: true });
  const all = [...uploaded, rejected];

  await settled(h);
  const newest = await allPages(h, 'limit=2');
  t.same(newest, all.map((e) => e.id).reverse(), 'desc by default, across pages of 2, internal events left out');
  const oldest = await allPages(h, 'limit=4&order=asc');
  t.same(
    oldest,
    all.map((e) => e.id),
    'asc pages',
  );
  t.notOk(newest.includes(internal.id), 'an internal event is no webhook event');
  t.same(await allPages(h, 'order=asc', h.ws.test), [sandbox.id], 'a test key reads the sandbox only');

  t.same(await allPages(h, 'types=document.rejected'), [rejected.id], 'an exact kind');
  t.same(
    await allPages(h, 'types=document.*&order=asc'),
    all.map((e) => e.id),
    'a prefix',
  );
  t.same(
    await allPages(h, `types=${encodeURIComponent('lead.*, document.rejected')}`),
    [rejected.id],
    'a list with a prefix that matches nothing here',
  );
  const unknown = await get(h, '/v1/events?types=lead.exploded');
  t.equal(unknown.status, 400);
  t.equal(unknown.body.error, 'validation_failed');
  t.match(unknown.body.fields, { types: /lead\.exploded/ });

  const after = await get(h, `/v1/events?order=asc&starting_after=${uploaded[2]!.id}`);
  t.same(
    after.body.data.map((e) => e.id),
    [uploaded[3]!.id, uploaded[4]!.id, rejected.id],
    'starting_after an event id follows the stream from there',
  );
  t.equal(after.body.has_more, false);
  t.equal(after.body.next_cursor, null);
  const wrongCursor = await get(
    h,
    `/v1/events?order=asc&cursor=${encodeURIComponent((await get(h, '/v1/events?limit=1')).body.next_cursor!)}`,
  );
  t.equal(wrongCursor.status, 400, "a desc page's cursor is refused for asc");
  const both = await get(h, `/v1/events?cursor=x&starting_after=${uploaded[0]!.id}`);
  t.equal(both.status, 400, 'cursor and starting_after together are refused');
  const otherMode = await get(h, `/v1/events?starting_after=${sandbox.id}`);
  t.equal(otherMode.status, 400, "starting_after must be an event of the key's mode");
});

t.test('oldest first holds back behind a running write transaction; newest first does not', async (t) => {
  const h = await webhookHarness(t);
  const before = await h.appendEvent('document.uploaded', resourcePayload('before'));
  await settled(h);
  const holder = await h.pool.connect();
  t.teardown(() => holder.release());
  await holder.query('BEGIN');
  await holder.query('SELECT pg_current_xact_id()'); // takes a transaction id, as any write would
  const after = await h.appendEvent('document.uploaded', resourcePayload('after'));

  t.same(await allPages(h, 'order=asc'), [before.id], 'an event committed behind an open transaction waits');
  t.same(await allPages(h, ''), [after.id, before.id], 'newest first reads it at once');
  await holder.query('COMMIT');
  await settled(h);
  t.same(await allPages(h, 'order=asc'), [before.id, after.id], 'read once the older transaction ends');
});

t.test('an event reads exactly as its delivery body; one by id', async (t) => {
  const h = await webhookHarness(t);
  await h.createEndpoint({ url: h.receiver.url('localhost', '/hooks'), events: ['document.uploaded'] });
  await h.startWorkers();
  const event = await h.appendEvent('document.uploaded', resourcePayload('naïve ✓ "quoted" \u2028'));
  await waitFor(() => h.receiver.forEvent(event.id).length === 1, 'the delivery arrives');
  const [delivered] = h.receiver.forEvent(event.id);

  const one = await h.request(`/v1/events/${event.id}`, { key: h.ws.live });
  t.equal(one.status, 200);
  t.equal(await one.text(), delivered!.body, 'GET /v1/events/{id} answers the delivery body byte for byte');
  const list = await get(h, '/v1/events?limit=1');
  t.ok(list.text.includes(delivered!.body), 'the list carries the same bytes');

  t.equal((await h.request(`/v1/events/${event.id}`, { key: h.ws.test })).status, 404, 'not in the other mode');
  const missing = await h.request('/v1/events/00000000-0000-4000-8000-000000000000', { key: h.ws.live });
  t.equal(missing.status, 404);
  t.match(await missing.json(), { error: 'not_found', message: 'No such event' });
});

t.test('kept for 30 days: older events are not listed and answer 404 saying why', async (t) => {
  const clock = new TestClock(new Date('2026-11-01T10:00:00Z'));
  const h = await webhookHarness(t, { now: clock.now });
  const old = await h.appendEvent('document.uploaded', resourcePayload('old'));
  clock.advance(20 * 24 * 3600 * 1000);
  const recent = await h.appendEvent('document.uploaded', resourcePayload('recent'));
  clock.advance(11 * 24 * 3600 * 1000);

  await settled(h);
  t.same(await allPages(h, 'order=asc'), [recent.id], 'only the last 30 days');
  const gone = await h.request(`/v1/events/${old.id}`, { key: h.ws.live });
  t.equal(gone.status, 404);
  t.match(await gone.json(), { error: 'not_found', message: /kept for 30 days; this one is older/ });

  const since = new Date(clock.now().getTime() - 15 * 24 * 3600 * 1000).toISOString();
  t.same(await allPages(h, `created[gte]=${encodeURIComponent(since)}`), [recent.id], 'created[gte]');
  t.same(
    await allPages(h, `created[lt]=${encodeURIComponent(recent.createdAt.toISOString())}`),
    [],
    'created[lt] is exclusive',
  );
});

t.test('a key needs events:read; the Error shape and rate-limit headers as everywhere', async (t) => {
  const h = await webhookHarness(t);
  const { value } = await h.ws.key({ scopes: ['leads:read'] });
  const refused = await h.request('/v1/events', { key: value });
  t.equal(refused.status, 403);
  t.match(await refused.json(), { error: 'insufficient_scope', required: 'events:read' });
  const ok = await h.request('/v1/events', { key: h.ws.live });
  t.equal(ok.status, 200);
  t.ok(ok.headers.get('ratelimit-remaining'), 'rate-limit headers on the answer');
  t.equal((await h.request('/v1/events', { key: h.ws.publicLive })).status, 403, 'public keys are refused');
});

t.test("an erased person's events read as erasure left them, as their scrubbed deliveries do", async (t) => {
  const h = await webhookHarness(t);
  await h.createEndpoint({ url: h.receiver.url('localhost', '/hooks'), events: ['lead.created'] });
  await h.startWorkers();
  const person = leadBody({ full_name: 'Zarina Quxworth', email: 'zarina.quxworth@example.com' });
  const created = await h.request('/v1/leads', { method: 'POST', key: h.ws.live, json: person });
  t.equal(created.status, 201);
  const leadId = ((await created.json()) as { id: string }).id;
  const before = await get(h, '/v1/events?types=lead.created&limit=1');
  const eventId = before.body.data[0]!.id;
  t.match(before.body.data[0]!.data, { full_name: 'Zarina Quxworth' }, 'readable before the erasure');
  await waitFor(
    async () =>
      (await h.pool.query("SELECT 1 FROM webhook_deliveries WHERE event_id = $1 AND status = 'succeeded'", [eventId]))
        .rowCount === 1,
    'the delivery is acknowledged',
  );

  t.equal((await h.admin('POST', `/leads/${leadId}/erase`)).status, 200);
  const after = await h.request(`/v1/events/${eventId}`, { key: h.ws.live });
  const text = await after.text();
  t.notOk(/Zarina|Quxworth|zarina\.quxworth/i.test(text), 'no personal value is readable');
  const listed = await get(h, '/v1/events?types=lead.*');
  t.notOk(/Zarina|Quxworth/i.test(listed.text), 'nor in the list');
  const body = (
    await h.pool.query<{ body: string }>('SELECT body FROM webhook_deliveries WHERE event_id = $1', [eventId])
  ).rows[0]!.body;
  t.same(JSON.parse(text), JSON.parse(body), 'the event reads as the scrubbed delivery body');
});
