import fc from 'fast-check';
import t from 'tap';
import { pauseEndpoint } from '../../src/commands/webhooks/endpoints.js';
import { TestClock } from '../support/app.js';
import { checkProperty } from '../support/properties.js';
import { resourcePayload, webhookHarness, type Harness } from './support/harness.js';
import { sleep, waitFor, type ReceivedRequest } from './support/receiver.js';

// Every delivery to an endpoint carries that endpoint's sequence number (dense, in the order the fan-out assigned
// them) and the id of the event it was sent just before; resends keep both. Checked over random runs of appends,
// failing receivers and retries, resends, pauses and resumes, with the fan-out and delivery workers running.

const KINDS = ['document.uploaded', 'document.rejected', 'document.scanned'] as const;

type Op =
  | { op: 'append'; kind: (typeof KINDS)[number]; sandbox: boolean; count: number; together: boolean }
  | { op: 'resend'; pick: number }
  | { op: 'pause'; endpoint: number }
  | { op: 'resume'; endpoint: number }
  | { op: 'tick' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('append' as const),
      kind: fc.constantFrom(...KINDS),
      sandbox: fc.boolean(),
      count: fc.integer({ min: 1, max: 6 }),
      together: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('resend' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('pause' as const), endpoint: fc.nat({ max: 2 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('resume' as const), endpoint: fc.nat({ max: 2 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('tick' as const) }) },
);

interface Row {
  id: string;
  event_id: string;
  endpoint_id: string;
  sequence: number;
  previous_event_id: string | null;
  resend_of: string | null;
  tx_id: string;
  position: number;
}

async function rowsOf(h: Harness, endpointIds: string[]): Promise<Row[]> {
  const result = await h.pool.query<Row>(
    `SELECT d.id, d.event_id, d.endpoint_id, d.sequence, d.previous_event_id, d.resend_of, e.tx_id::text AS tx_id, e.position
       FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
      WHERE d.endpoint_id = ANY ($1::uuid[])
      ORDER BY d.endpoint_id, e.tx_id, e.position`,
    [endpointIds],
  );
  return result.rows;
}

/** The invariants, as a list of broken ones (empty when all hold). */
function brokenInvariants(rows: Row[], received: ReceivedRequest[], endpointIds: string[]): string[] {
  const broken: string[] = [];
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const endpointId of endpointIds) {
    // Rows are in log order; an endpoint's originals must be numbered 1, 2, 3 … in that order.
    const originals = rows.filter((r) => r.endpoint_id === endpointId && r.resend_of === null);
    originals.forEach((r, i) => {
      if (r.sequence !== i + 1)
        broken.push(`${endpointId}: the ${i + 1}th event in log order has number ${r.sequence}`);
      const previous = i === 0 ? null : originals[i - 1]!.event_id;
      if (r.previous_event_id !== previous)
        broken.push(`${endpointId} #${r.sequence}: previous event ${r.previous_event_id}, expected ${previous}`);
    });
  }
  for (const resend of rows.filter((r) => r.resend_of !== null)) {
    const original = byId.get(resend.resend_of!);
    if (!original || original.sequence !== resend.sequence || original.previous_event_id !== resend.previous_event_id)
      broken.push(`resend ${resend.id} does not keep its original's number and previous event`);
  }
  for (const request of received) {
    const row = byId.get(String(request.headers['x-service-delivery']));
    if (!row) continue;
    if (request.headers['x-service-sequence'] !== String(row.sequence))
      broken.push(`delivery ${row.id} was sent with sequence ${String(request.headers['x-service-sequence'])}`);
    if ((request.headers['x-service-previous-event'] ?? null) !== row.previous_event_id)
      broken.push(
        `delivery ${row.id} was sent with previous event ${String(request.headers['x-service-previous-event'])}`,
      );
  }
  return broken;
}

t.test('sequence numbers are dense, in assignment order, kept by resends, whatever fails', async (t) => {
  const clock = new TestClock(new Date('2026-11-20T10:00:00Z'));
  const h = await webhookHarness(t, { now: clock.now, definition: { limits: { webhook_endpoints: 200 } } });
  let failures: boolean[] = [false];
  h.receiver.reply = (_request, index) =>
    failures[index % failures.length] ? { status: 500, body: 'down' } : { status: 200, body: 'ok' };
  await h.startWorkers({ pollIntervalMs: 10, fanOutPollIntervalMs: 10 });

  const property = fc.asyncProperty(
    fc.array(opArb, { minLength: 3, maxLength: 14 }),
    fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }),
    async (ops, failing) => {
      failures = failing;
      const endpoints = [
        await h.createEndpoint({ url: h.receiver.url('localhost', '/a'), events: ['document.uploaded'] }),
        await h.createEndpoint({
          url: h.receiver.url('localhost', '/b'),
          events: ['document.uploaded', 'document.rejected'],
        }),
        await h.createEndpoint({ url: h.receiver.url('hooks.test', '/c'), events: ['document.uploaded'] }, h.ws.test),
      ];
      const ids = endpoints.map((e) => e.id);
      let expected = 0;
      for (const op of ops) {
        switch (op.op) {
          case 'append':
            // Half the appends land together, so one fan-out batch numbers several events of one endpoint.
            if (op.count > 1 && op.together)
              await Promise.all(
                Array.from({ length: op.count }, () =>
                  h.appendEvent(op.kind, op.kind === 'document.scanned' ? null : resourcePayload(), {
                    sandbox: op.sandbox,
                  }),
                ),
              );
            else
              for (let i = 0; i < op.count; i++)
                await h.appendEvent(op.kind, op.kind === 'document.scanned' ? null : resourcePayload(), {
                  sandbox: op.sandbox,
                });
            if (op.kind === 'document.uploaded') expected += op.count * (op.sandbox ? 1 : 2);
            if (op.kind === 'document.rejected' && !op.sandbox) expected += op.count;
            break;
          case 'resend': {
            const originals = (await rowsOf(h, ids)).filter((r) => r.resend_of === null);
            const chosen = originals[op.pick % Math.max(originals.length, 1)];
            if (!chosen) break;
            const sandbox = ids.indexOf(chosen.endpoint_id) === 2 ? '?sandbox=true' : '';
            const answer = await h.admin(
              'POST',
              `/webhooks/${chosen.endpoint_id}/deliveries/${chosen.id}/resend${sandbox}`,
            );
            if (answer.status !== 201) throw new Error(`resend answered ${answer.status}: ${await answer.text()}`);
            break;
          }
          case 'pause':
            await pauseEndpoint(h.services, ids[op.endpoint]!, 50);
            break;
          case 'resume': {
            const sandbox = op.endpoint === 2 ? '?sandbox=true' : '';
            const answer = await h.admin('POST', `/webhooks/${ids[op.endpoint]!}/resume${sandbox}`);
            if (answer.status >= 500) throw new Error(`resume answered ${answer.status}`);
            break;
          }
          case 'tick':
            clock.advance(2 * 60_000);
            await sleep(30);
            break;
        }
      }
      // Every event is fanned out before the invariants are read (the workers keep running meanwhile).
      await waitFor(
        async () => (await rowsOf(h, ids)).filter((r) => r.resend_of === null).length === expected,
        `the fan-out records the ${expected} deliveries the subscriptions call for`,
        20_000,
      );
      const broken = brokenInvariants(await rowsOf(h, ids), h.receiver.requests, ids);
      for (const [i, id] of ids.entries())
        await h.request(`/v1/webhooks/${id}`, { method: 'DELETE', key: i === 2 ? h.ws.test : h.ws.live });
      if (broken.length) throw new Error(broken.slice(0, 5).join('\n'));
    },
  );
  await checkProperty(t, 'delivery sequence numbers', property, 12);
});

t.test('a receiver sees the number and the previous event in headers, and lists by number from the API', async (t) => {
  const h = await webhookHarness(t);
  const endpoint = await h.createEndpoint({
    url: h.receiver.url('localhost', '/hooks'),
    events: ['document.uploaded'],
  });
  await h.startWorkers();
  const events: Awaited<ReturnType<Harness['appendEvent']>>[] = [];
  for (let i = 0; i < 3; i++) events.push(await h.appendEvent('document.uploaded', resourcePayload(`n${i}`)));
  await waitFor(() => events.every((e) => h.receiver.forEvent(e.id).length === 1), 'all three arrive');
  const headers = events.map((e) => h.receiver.forEvent(e.id)[0]!.headers);
  t.same(
    headers.map((x) => x['x-service-sequence']),
    ['1', '2', '3'],
    'X-Service-Sequence counts the endpoint’s deliveries',
  );
  t.same(
    headers.map((x) => x['x-service-previous-event'] ?? null),
    [null, events[0]!.id, events[1]!.id],
    'X-Service-Previous-Event names the event sent just before (none on the first)',
  );

  const listed = await h.request(`/v1/webhooks/${endpoint.id}/deliveries?sequence_gte=2&limit=1`, { key: h.ws.live });
  t.equal(listed.status, 200);
  const page = (await listed.json()) as {
    data: { sequence: number; event_id: string; state: string }[];
    has_more: boolean;
  };
  t.same(
    page.data.map((d) => [d.sequence, d.event_id]),
    [[2, events[1]!.id]],
  );
  t.equal(page.has_more, true);
  await waitFor(async () => {
    const r = await h.request(`/v1/webhooks/${endpoint.id}/deliveries`, { key: h.ws.live });
    const all = (await r.json()) as { data: { state: string }[] };
    return all.data.length === 3 && all.data.every((d) => d.state === 'succeeded');
  }, 'each delivery reads succeeded');
  const other = await h.request(`/v1/webhooks/${endpoint.id}/deliveries`, { key: h.ws.test });
  t.equal(other.status, 404, "another mode's key does not see the endpoint");
  const zero = await h.request(`/v1/webhooks/${endpoint.id}/deliveries?sequence_gte=0`, { key: h.ws.live });
  t.equal(zero.status, 400, 'numbers start at 1');
});

t.test('states as the receiver saw them: retrying, then waiting while paused', async (t) => {
  const clock = new TestClock(new Date('2026-11-20T10:00:00Z'));
  const h = await webhookHarness(t, { now: clock.now });
  h.receiver.reply = () => ({ status: 503, body: 'busy' });
  const endpoint = await h.createEndpoint({
    url: h.receiver.url('localhost', '/hooks'),
    events: ['document.uploaded'],
  });
  await h.startWorkers();
  const event = await h.appendEvent('document.uploaded', resourcePayload());
  const list = async () =>
    (
      (await (await h.request(`/v1/webhooks/${endpoint.id}/deliveries`, { key: h.ws.live })).json()) as {
        data: {
          state: string;
          attempts: number;
          last_response_status: number | null;
          next_attempt_at: string | null;
        }[];
      }
    ).data;
  await waitFor(async () => (await list())[0]?.state === 'retrying', 'the failed delivery is retrying');
  t.match((await list())[0], { attempts: 1, last_response_status: 503, next_attempt_at: /Z$/ });
  await pauseEndpoint(h.services, endpoint.id, 50);
  t.equal((await list())[0]!.state, 'waiting', 'a paused endpoint’s delivery waits');
  t.equal((await list()).length, 1, `one delivery of ${event.id}`);
});
