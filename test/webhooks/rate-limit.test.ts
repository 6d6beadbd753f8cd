import t from 'tap';
import { seedWorkspace } from '../support/app.js';
import { resourcePayload, webhookHarness } from './support/harness.js';
import { spawnWorkerProcess } from './support/worker-child.js';
import { waitFor, type ReceivedRequest } from './support/receiver.js';

// An endpoint's rate (`rate_limit_per_second`): the claim never hands it more deliveries than its rate in any one
// second, across every worker, while an endpoint without a rate beside it is not held back (docs/decisions.md,
// "A per-endpoint rate").

const KIND = 'document.uploaded';

t.test('the rate is set on creation and by PATCH, validated, and only in its own workspace and mode', async (t) => {
  const h = await webhookHarness(t);
  const url = h.receiver.url();
  const limited = await h.createEndpoint({ url, events: [KIND], rate_limit_per_second: 5 });
  t.equal(limited.rate_limit_per_second, 5, 'the 201 shows the rate');
  const unlimited = await h.createEndpoint({ url, events: [KIND] });
  t.equal(unlimited.rate_limit_per_second, null, 'no rate given: no limit');

  const refused: [string, unknown][] = [
    ['zero', 0],
    ['over 1000', 1001],
    ['not an integer', 2.5],
    ['a string', '5'],
    ['negative', -1],
  ];
  for (const [name, value] of refused) {
    for (const [how, response] of [
      [
        'POST',
        await h.request('/v1/webhooks', {
          method: 'POST',
          key: h.ws.live,
          json: { url, events: [KIND], rate_limit_per_second: value },
        }),
      ],
      [
        'PATCH',
        await h.request(`/v1/webhooks/${limited.id}`, {
          method: 'PATCH',
          key: h.ws.live,
          json: { rate_limit_per_second: value },
        }),
      ],
    ] as const) {
      const body = (await response.json()) as { error: string; message: string; fields?: Record<string, string> };
      t.equal(response.status, 400, `${how} ${name}: 400`);
      t.equal(body.error, 'validation_failed', `${how} ${name}: validation_failed`);
      t.type(body.message, 'string', `${how} ${name}: the Error shape's message`);
      t.ok(
        body.fields && 'rate_limit_per_second' in body.fields,
        `${how} ${name}: fields names rate_limit_per_second (${JSON.stringify(body.fields)})`,
      );
    }
  }
  const empty = await h.request(`/v1/webhooks/${limited.id}`, { method: 'PATCH', key: h.ws.live, json: {} });
  t.equal(empty.status, 400, 'a PATCH that changes nothing is refused');
  t.equal(((await empty.json()) as { error: string }).error, 'validation_failed');

  const edges = [1, 1000, null, 7];
  for (const rate of edges) {
    const response = await h.request(`/v1/webhooks/${limited.id}`, {
      method: 'PATCH',
      key: h.ws.live,
      json: { rate_limit_per_second: rate },
    });
    t.equal(response.status, 200, `PATCH to ${rate}`);
    t.equal(((await response.json()) as { rate_limit_per_second: unknown }).rate_limit_per_second, rate);
  }
  const both = await h.request(`/v1/webhooks/${limited.id}`, {
    method: 'PATCH',
    key: h.ws.live,
    json: { payload_version: '2026-11-22', rate_limit_per_second: 5 },
  });
  t.match(await both.json(), { payload_version: '2026-11-22', rate_limit_per_second: 5 }, 'version and rate at once');
  const versionOnly = await h.request(`/v1/webhooks/${limited.id}`, {
    method: 'PATCH',
    key: h.ws.live,
    json: { payload_version: '2026-11-29' },
  });
  t.match(await versionOnly.json(), { rate_limit_per_second: 5 }, 'a PATCH without the rate keeps it');
  const history = await h.pool.query<{ type: string; data: Record<string, unknown> }>(
    "SELECT type, data FROM events WHERE stream_id = $1 AND type = 'webhook_endpoint.rate_limit_changed' ORDER BY position",
    [`webhook-endpoint-${limited.id}`],
  );
  t.same(
    history.rows.map((r) => r.data.rate_limit_per_second),
    [1, 1000, null, 7, 5],
    'each change is one event, from and to (none when unchanged)',
  );

  const other = await seedWorkspace(h);
  const foreign = await h.request(`/v1/webhooks/${limited.id}`, {
    method: 'PATCH',
    key: other.live,
    json: { rate_limit_per_second: 1 },
  });
  t.equal(foreign.status, 404, "another workspace's key cannot change the rate");
  t.equal(((await foreign.json()) as { error: string }).error, 'not_found');
  const testKey = await h.request(`/v1/webhooks/${limited.id}`, {
    method: 'PATCH',
    key: h.ws.test,
    json: { rate_limit_per_second: 1 },
  });
  t.equal(testKey.status, 404, "a test key cannot change a live endpoint's rate");
  const stored = await h.pool.query<{ rate_limit_per_second: number }>(
    'SELECT rate_limit_per_second FROM webhook_endpoints WHERE id = $1',
    [limited.id],
  );
  t.equal(stored.rows[0]!.rate_limit_per_second, 5, 'neither refused change reached the endpoint');
});

/** The most arrivals any window of `windowMs` (half-open) holds. */
function busiestWindow(arrivals: readonly number[], windowMs: number): number {
  const sorted = [...arrivals].sort((a, b) => a - b);
  let most = 0;
  let start = 0;
  for (let end = 0; end < sorted.length; end++) {
    while (sorted[end]! - sorted[start]! >= windowMs) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

t.test(
  'an endpoint at 5 a second gets no more in any second from workers in two processes, and one without a rate beside it is not slowed',
  async (t) => {
    const h = await webhookHarness(t);
    const RATE = 5;
    const EVENTS = 40;
    const a = await h.createEndpoint({
      url: h.receiver.url('127.0.0.1', '/limited'),
      events: [KIND],
      rate_limit_per_second: RATE,
    });
    const b = await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/unlimited'), events: [KIND] });
    for (let i = 0; i < EVENTS; i++) await h.appendEvent(KIND, resourcePayload(`doc-${i}`));

    // What the delivery log says while A waits for its rate, sampled as it drains.
    const throttledSeen: { admin: number; api: number } = { admin: 0, api: 0 };
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const admin = (await (await h.admin('GET', `/webhooks/${a.id}/deliveries?limit=100`)).json()) as {
          data: { status: string; attempts: number; throttled_until: string | null }[];
        };
        if (admin.data.some((d) => d.status === 'pending' && d.attempts === 0 && d.throttled_until !== null))
          throttledSeen.admin++;
        const api = (await (
          await h.request(`/v1/webhooks/${a.id}/deliveries?limit=100`, { key: h.ws.live })
        ).json()) as { data: { state: string; throttled_until: string | null }[] };
        if (api.data.some((d) => d.state === 'queued' && d.throttled_until !== null)) throttledSeen.api++;
        await new Promise((r) => setTimeout(r, 150));
      }
    })();
    t.teardown(() => {
      sampling = false;
      return sampler.catch(() => undefined);
    });

    // Workers in two processes (this one's, twice, and a child's): the rate is kept in the claim, across all of them.
    const child = spawnWorkerProcess(t, h);
    await new Promise<void>((ready, failed) => {
      child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && ready());
      child.once('exit', (code) => failed(new Error(`the worker process exited (${code})`)));
    });
    await h.startWorkers();
    await h.startWorkers();
    const arrivals = (path: string) => h.receiver.requests.filter((r) => r.path === path);
    await waitFor(() => arrivals('/limited').length >= EVENTS, 'A receives all of its deliveries', 30_000);
    sampling = false;
    await sampler;

    const atA = arrivals('/limited');
    const atB = arrivals('/unlimited');
    t.equal(atB.length, EVENTS, 'B received all of its deliveries');
    t.equal(atA.length, EVENTS, 'A received each delivery once');
    const times = atA.map((r) => r.receivedAt);
    const busiest = busiestWindow(times, 1_000);
    t.comment(
      `arrivals at A (ms from the first): ${[...times]
        .sort((x, y) => x - y)
        .map((x) => x - Math.min(...times))
        .join(' ')}`,
    );
    t.ok(busiest <= RATE, `no one-second window at A's receiver holds more than ${RATE} (busiest: ${busiest})`);
    const span = Math.max(...times) - Math.min(...times);
    t.ok(span >= ((EVENTS - RATE) / RATE) * 1_000, `A's 40 took at least 7 s from its first to its last (${span} ms)`);
    const halfOfA = [...times].sort((x, y) => x - y)[EVENTS / 2 - 1]!;
    const lastOfB = Math.max(...atB.map((r) => r.receivedAt));
    t.ok(lastOfB < halfOfA, `B had all of its deliveries before A had half of its (${halfOfA - lastOfB} ms before)`);

    // Order per endpoint: each claim takes the oldest due first (first due when made, then id), so a delivery that arrived
    // in a later second was never due before one that arrived in an earlier second; numbers and chain stay whole.
    const seq = (r: ReceivedRequest) => Number(r.headers['x-service-sequence']);
    const due = await h.pool.query<{ id: string; at: Date }>(
      'SELECT d.id, d.created_at AS at FROM webhook_deliveries d WHERE d.endpoint_id = $1',
      [a.id],
    );
    t.equal(due.rows.length, EVENTS, 'one delivery per event to A');
    const dueAt = new Map(due.rows.map((r) => [r.id, r.at.getTime()]));
    let outOfOrder = 0;
    for (const x of atA)
      for (const y of atA) {
        const [dx, dy] = [String(x.headers['x-service-delivery']), String(y.headers['x-service-delivery'])];
        if (
          y.receivedAt - x.receivedAt > 500 &&
          (dueAt.get(dy)! < dueAt.get(dx)! || (dueAt.get(dy) === dueAt.get(dx) && dy < dx))
        )
          outOfOrder++;
      }
    t.equal(outOfOrder, 0, 'no delivery arrived a second after one that was due after it');
    t.same(
      atA.map(seq).sort((x, y) => x - y),
      Array.from({ length: EVENTS }, (_, i) => i + 1),
      "A's sequence numbers are 1..40, each once",
    );
    const eventOfSeq = new Map(atA.map((r) => [seq(r), r.headers['webhook-id']]));
    for (const r of atA)
      if (seq(r) > 1)
        t.equal(r.headers['x-service-previous-event'], eventOfSeq.get(seq(r) - 1), `previous event of ${seq(r)}`);

    // Held back is neither an attempt nor a failure.
    const attempts = await h.pool.query<{ n: number; failed: number; max: number }>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE a.response_status IS DISTINCT FROM 200)::int AS failed,
              max(a.attempt)::int AS max
         FROM webhook_delivery_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1`,
      [a.id],
    );
    t.same(attempts.rows[0], { n: EVENTS, failed: 0, max: 1 }, 'one successful attempt per delivery of A');
    const health = await h.pool.query<{ consecutive_failures: number }>(
      'SELECT consecutive_failures FROM webhook_endpoint_health WHERE endpoint_id = $1',
      [a.id],
    );
    t.equal(health.rows[0]!.consecutive_failures, 0, 'the rate counts no failure');
    t.ok(throttledSeen.admin > 0, 'the delivery log showed deliveries waiting for the rate (throttled_until)');
    t.ok(throttledSeen.api > 0, 'the delivery API showed them queued with throttled_until');
    t.equal(b.rate_limit_per_second, null);
  },
);
