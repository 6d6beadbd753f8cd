import fc from 'fast-check';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { createServices } from '../../src/bootstrap.js';
import { createPool } from '../../src/storage/postgres.js';
import { startWorkers } from '../../src/subscribers/index.js';
import { DeliveryWorker } from '../../src/subscribers/webhook-delivery-worker.js';
import { DeliveryClient } from '../../src/webhooks/delivery-client.js';
import { configureWebhookRuntime } from '../../src/webhooks/runtime.js';
import { liveLeaseRows } from './support/endpoint-rows.js';
import { resourcePayload, webhookHarness, type Harness } from './support/harness.js';
import { spawnWorkerProcess } from './support/worker-child.js';
import { waitFor } from './support/receiver.js';
import { checkProperty } from '../support/properties.js';

t.test(
  'two sets of workers on separate connection pools, as two processes have, never send a delivery twice',
  async (t) => {
    const h = await webhookHarness(t);
    h.receiver.reply = () => ({ status: 200, delayMs: 3 });
    const endpoints = await Promise.all(
      [0, 1, 2].map((i) =>
        h.createEndpoint({ url: h.receiver.url('127.0.0.1', `/e${i}`), events: ['document.uploaded'] }),
      ),
    );
    // A second set of services on a pool of its own: it shares nothing with the first but the database.
    const url = h.services.config.databaseUrl!;
    const pool2 = createPool(url, 10);
    t.teardown(() => pool2.end());
    const other = await createServices(h.services.config, {
      pool: pool2,
      url,
      kind: 'external',
      close: async () => undefined,
    });
    configureWebhookRuntime(other, { ca: h.pki.ca, resolve: h.resolver.resolve });
    const a = await h.startWorkers({ concurrency: 8 });
    const b = await startWorkers(other, pino({ level: 'silent' }), { pollIntervalMs: 25, concurrency: 8 });
    t.teardown(() => b.stop());

    const events = [];
    for (let batch = 0; batch < 10; batch++) {
      events.push(
        ...(await Promise.all(Array.from({ length: 20 }, () => h.appendEvent('document.uploaded', resourcePayload())))),
      );
    }
    const expected = events.length * endpoints.length;
    await waitFor(
      async () => {
        const done = await h.pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'succeeded'",
        );
        return done.rows[0]!.n === expected;
      },
      'every delivery succeeds',
      60_000,
    );
    await a.stop();
    await b.stop();
    t.equal(
      h.receiver.requests.length,
      expected,
      `exactly ${expected} requests for ${events.length} events to ${endpoints.length} endpoints`,
    );
    t.equal(
      new Set(h.receiver.requests.map((r) => r.headers['x-service-delivery'])).size,
      expected,
      'no delivery id arrived twice',
    );
    t.equal(
      new Set(h.receiver.requests.map((r) => `${r.path} ${String(r.headers['webhook-id'])}`)).size,
      expected,
      'each event reached each endpoint once',
    );
    const rows = await h.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries');
    t.equal(rows.rows[0]!.n, expected, 'two fan-outs recorded each (event, endpoint) once');
  },
);

t.test(
  'a worker killed mid-delivery: after a restart every event is delivered, with the same event and delivery ids',
  async (t) => {
    let offsetMs = 0;
    const h = await webhookHarness(t, { now: () => new Date(Date.now() + offsetMs) });
    // The first five requests are held open and never answered: the worker dies while they are in flight.
    h.receiver.reply = (_request, index) => (index < 5 ? 'hang' : { status: 200 });
    const endpoint = await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] });
    const events = [];
    for (let i = 0; i < 20; i++)
      events.push(await h.appendEvent('document.uploaded', resourcePayload(`file-${i}.pdf`)));

    const child = spawnWorkerProcess(t, h);
    await waitFor(
      () => h.receiver.requests.length >= 20,
      'the child worker sent every event (five are hanging)',
      30_000,
    );
    await waitFor(async () => {
      const done = await h.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'succeeded'",
      );
      return done.rows[0]!.n === 15;
    }, 'the fifteen answered deliveries are recorded');
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const inFlight = await h.pool.query<{ id: string }>("SELECT id FROM webhook_deliveries WHERE status = 'pending'");
    t.equal(inFlight.rows.length, 5, 'five deliveries were in flight when the worker died');
    const leased = new Set((await liveLeaseRows(h.pool, h.services.now())).map((row) => row.id));
    t.ok(
      inFlight.rows.every((r) => leased.has(r.id)),
      "still leased to the dead worker on their endpoint's queue row",
    );

    const later = [];
    for (let i = 0; i < 5; i++) later.push(await h.appendEvent('document.uploaded', resourcePayload(`later-${i}.pdf`)));
    // Restart in this process once the dead worker's leases (60 s) have run out.
    offsetMs = 61_000;
    await h.startWorkers();
    await waitFor(async () => {
      const done = await h.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'succeeded'",
      );
      return done.rows[0]!.n === 25;
    }, 'every delivery succeeds after the restart');
    const acked = h.receiver.requests.slice(5);
    for (const event of [...events, ...later]) {
      t.equal(
        acked.filter((r) => r.headers['webhook-id'] === event.id).length,
        1,
        `event ${event.id} acknowledged once`,
      );
    }
    const hung = h.receiver.requests.slice(0, 5);
    for (const request of hung) {
      const retried = acked.find((r) => r.headers['webhook-id'] === request.headers['webhook-id'])!;
      t.equal(
        retried.headers['x-service-delivery'],
        request.headers['x-service-delivery'],
        'the retry after the crash keeps the delivery id',
      );
      t.equal(retried.body, request.body, 'and the body');
    }
    void endpoint;
  },
);

t.test(
  'the wake-ups of one turn of the event loop make one claim, not one and a second that finds nothing',
  async (t) => {
    const h = await webhookHarness(t);
    const worker = wakeOnlyWorker(t, h);
    const claims = async () =>
      (await h.services.metrics.deliveryClaims.get()).values.reduce((sum, v) => sum + v.value, 0);
    const before = await claims();
    worker.start();
    await waitFor(async () => (await claims()) === before + 1, 'the first claim', 5_000);
    // As the attempts recorded by one statement do when their slots free: many wake-ups in one turn.
    for (let i = 0; i < 20; i++) worker.wake();
    await waitFor(async () => (await claims()) >= before + 2, 'a claim for the wake-ups', 5_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    t.equal(await claims(), before + 2, 'twenty wake-ups in one turn made one claim');
    const empty = (await h.services.metrics.deliveryClaims.get()).values.find((v) => v.labels.result === 'empty');
    t.equal(empty?.value, 2, 'both found nothing (nothing is due): counted as empty');
  },
);

t.test(
  "a slot's time is measured: each claim's, and each attempt's wait until its outcome is written (a held row counts)",
  async (t) => {
    const h = await webhookHarness(t);
    const endpoint = await h.createEndpoint({
      url: h.receiver.url('127.0.0.1', '/slots'),
      events: ['document.uploaded'],
    });
    h.receiver.reply = () => ({ status: 200, body: 'ok', delayMs: 200 });
    const metrics = h.services.metrics;
    const totals = async (histogram: typeof metrics.deliveryClaimDuration) => {
      const values = (await histogram.get()).values;
      const of = (suffix: string) => values.find((v) => v.metricName?.endsWith(suffix))?.value ?? 0;
      return { sum: of('_sum'), count: of('_count') };
    };
    const workers = await h.startWorkers();
    t.teardown(() => workers.stop());
    await h.appendEvent('document.uploaded', resourcePayload());
    await waitFor(async () => h.receiver.requests.length === 1, 'the attempt reaches the receiver');
    // While the receiver takes its 200 ms, another transaction takes the delivery's row, which the recording of the
    // outcome must lock: the outcome cannot be written until it lets go, a second later.
    const holder = await h.pool.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1 FOR UPDATE', [endpoint.id]);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await holder.query('COMMIT');
    holder.release();
    await waitFor(async () => (await totals(metrics.deliveryRecordingDelay)).count === 1, 'the outcome written');
    const recording = await totals(metrics.deliveryRecordingDelay);
    t.ok(recording.sum >= 0.5, `the wait for the held row is counted (${recording.sum.toFixed(3)} s)`);
    const claims = (await metrics.deliveryClaims.get()).values.reduce((sum, v) => sum + v.value, 0);
    const claimTimes = await totals(metrics.deliveryClaimDuration);
    t.equal(claimTimes.count, claims, 'every claim has its time');
    t.ok(claimTimes.sum > 0, 'claims take time');
    t.match(await metrics.text(), /webhook_delivery_recording_seconds_bucket\{le="0.001"\} 0/);
  },
);

t.test(
  'no wake-up is lost: whatever the timing of wake-ups and claims, what was due at a wake-up is sent',
  async (t) => {
    // The worker coalesces wake-ups (one claim per event-loop turn, and those arriving during a claim into one more):
    // a wake-up dropped while a claim runs would leave its delivery waiting for the poll. The poll is off here, and no
    // notification reaches this worker, so only the test's wake-ups (and the worker's own, as attempts are recorded)
    // can send what the test makes due.
    const h = await webhookHarness(t);
    const endpoint = await h.createEndpoint({
      url: h.receiver.url('127.0.0.1', '/wakes'),
      events: ['document.uploaded'],
    });
    const worker = wakeOnlyWorker(t, h);
    worker.start();
    const sent = () => h.receiver.requests.map((r) => r.headers['x-service-delivery'] as string);
    const makeDue = async (count: number): Promise<string[]> => {
      if (count === 0) return [];
      // Due at the service's clock, as the fan-out makes them: the database's now() carries microseconds, and a claim
      // in the same millisecond (the service's clock has milliseconds) would find them not yet due.
      const rows = await h.pool.query<{ id: string }>(
        `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status,
                                       next_attempt_at, created_at, updated_at)
       SELECT gen_random_uuid(), gen_random_uuid(), $1, $2, false, 'document.uploaded', '{}', 'pending', $4, $4, $4
         FROM generate_series(1, $3) RETURNING id`,
        [endpoint.id, h.ws.workspace.id, count, h.services.now()],
      );
      return rows.rows.map((r) => r.id);
    };
    // How the test waits between wake-ups: not at all (the same turn), to the next turn, or a few milliseconds
    // (a claim or a send may be under way).
    const pause = fc.oneof(
      fc.constant<'same turn'>('same turn'),
      fc.constant<'next turn'>('next turn'),
      fc.integer({ min: 1, max: 15 }),
    );
    const step = fc.record({
      due: fc.integer({ min: 0, max: 3 }),
      wakes: fc.integer({ min: 1, max: 4 }),
      between: pause,
      after: pause,
      replyMs: fc.integer({ min: 0, max: 10 }),
    });
    await checkProperty(
      t,
      'wake-ups',
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const made: string[] = [];
        for (const s of steps) {
          h.receiver.reply = () => ({ status: 200, delayMs: s.replyMs });
          made.push(...(await makeDue(s.due)));
          for (let i = 0; i < s.wakes; i++) {
            worker.wake();
            await wait(s.between);
          }
          await wait(s.after);
        }
        const expected = new Set(made);
        const deadline = Date.now() + 5_000;
        while ([...expected].some((id) => !sent().includes(id)) && Date.now() < deadline)
          await new Promise((resolve) => setTimeout(resolve, 20));
        const received = sent().filter((id) => expected.has(id));
        // Every delivery made due was sent, once (none was sent twice: each lease is taken once).
        return received.length === expected.size && new Set(received).size === expected.size;
      }),
      8,
    );
  },
);

/**
 * A delivery worker with no poll (one an hour) and no notification listener: only the wake-ups a test makes, and the
 * worker's own as it records attempts, start claims. Started by the test; stopped at teardown.
 */
function wakeOnlyWorker(t: Test, h: Harness): DeliveryWorker {
  const runtime = h.services.webhooks;
  const client = new DeliveryClient({ allowLoopback: true, resolve: runtime.resolve, ca: runtime.ca });
  const worker = new DeliveryWorker(h.services, client, pino({ level: 'silent' }), { pollIntervalMs: 3_600_000 });
  t.teardown(async () => {
    await worker.stop();
    client.close();
  });
  return worker;
}

function wait(how: 'same turn' | 'next turn' | number): Promise<void> | void {
  if (how === 'same turn') return;
  if (how === 'next turn') return new Promise((resolve) => setImmediate(resolve));
  return new Promise((resolve) => setTimeout(resolve, how));
}
