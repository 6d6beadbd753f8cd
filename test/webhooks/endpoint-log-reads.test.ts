import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { resumedBacklogStatement, supersedingStatement } from '../../src/webhooks/deliveries.js';
import { checkProperty } from '../support/properties.js';
import { clearWebhookRows, insertEndpointRow } from './support/endpoint-rows.js';
import { BODY, NOW, connection, rolledBack, rowsRead } from './support/plan-reads.js';

// What an endpoint's delivery log holds (30 days of it) must not be read to act on the few deliveries that wait: a
// successful manual resend ends its event's other pending deliveries to the endpoint, and a resume schedules what the
// endpoint held. Both once filtered the endpoint's whole log, the first in the workers' recording path. Reads are
// counted from EXPLAIN ANALYZE (support/plan-reads.ts), with statistics gathered before or after the rows that wait.

interface ResendCase {
  /** What the endpoint's log holds of other events, delivered. */
  delivered: number;
  /** Other events' deliveries still pending at the endpoint. */
  pendingOthers: number;
  /** The event's original delivery to the endpoint. */
  original: 'pending' | 'failed' | 'succeeded';
  /** Its resends other than the one that succeeded, in the order they were made. */
  otherResends: ('pending' | 'succeeded')[];
  analyzed: 'before the burst' | 'on the log';
}

const resendCases = fc.record({
  delivered: fc.integer({ min: 2_000, max: 4_000 }),
  pendingOthers: fc.integer({ min: 0, max: 500 }),
  original: fc.constantFrom<ResendCase['original']>('pending', 'failed', 'succeeded'),
  otherResends: fc.array(fc.constantFrom<'pending' | 'succeeded'>('pending', 'succeeded'), { maxLength: 3 }),
  analyzed: fc.constantFrom<ResendCase['analyzed']>('before the burst', 'on the log'),
});

t.test("a successful resend ends its event's pending deliveries to its endpoint, reading only those", async (t) => {
  const client = await connection(t);
  let most = 0;
  await checkProperty(
    t,
    'superseding reads',
    fc.asyncProperty(resendCases, async (c) => {
      await clearWebhookRows(client);
      const tenantId = randomUUID();
      const endpointId = await insertEndpointRow(client, tenantId, NOW, 'lead.created');
      const otherEndpointId = await insertEndpointRow(client, tenantId, NOW, 'lead.created');
      const eventId = randomUUID();
      // One delivery; `resendOf` null for an original. Pending ones are due, as the fan-out and resends make them.
      const add = async (row: { event: string; endpoint: string; status: string; resendOf: string | null }) =>
        (
          await client.query<{ id: string }>(
            `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status,
                                             next_attempt_at, resend_of, created_at, updated_at)
             VALUES (gen_random_uuid(), $1, $2, $3, false, 'lead.created', $4, $5,
                     CASE WHEN $5::text = 'pending' THEN $6::timestamptz END, $7::uuid, $6, $6) RETURNING id`,
            [row.event, row.endpoint, tenantId, BODY, row.status, NOW, row.resendOf],
          )
        ).rows[0]!.id;
      await client.query(
        `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status,
                                         next_attempt_at, created_at, updated_at)
         SELECT gen_random_uuid(), gen_random_uuid(), $1, $2, false, 'lead.created', $3, s,
                CASE WHEN s = 'pending' THEN $4::timestamptz END, $4, $4
           FROM generate_series(1, $5::int + $6::int) g,
                LATERAL (SELECT CASE WHEN g <= $5::int THEN 'succeeded' ELSE 'pending' END AS s) st`,
        [endpointId, tenantId, BODY, NOW, c.delivered, c.pendingOthers],
      );
      if (c.analyzed === 'before the burst') await client.query('ANALYZE webhook_deliveries');
      const original = await add({ event: eventId, endpoint: endpointId, status: c.original, resendOf: null });
      // The same event to another endpoint: not this resend's to end.
      const elsewhere = await add({ event: eventId, endpoint: otherEndpointId, status: 'pending', resendOf: null });
      const others: { id: string; status: string }[] = [];
      for (const status of c.otherResends)
        others.push({ id: await add({ event: eventId, endpoint: endpointId, status, resendOf: original }), status });
      const resend = await add({ event: eventId, endpoint: endpointId, status: 'succeeded', resendOf: original });
      if (c.analyzed === 'on the log') await client.query('ANALYZE webhook_deliveries');

      const expected = [
        ...(c.original === 'pending' ? [original] : []),
        ...others.filter((o) => o.status === 'pending').map((o) => o.id),
      ].sort();
      const { text, values } = supersedingStatement([{ id: resend, event_id: eventId, endpoint_id: endpointId }], NOW);
      const outcome = await rolledBack(client, async () => {
        const read = await rowsRead(client, text, values);
        const ended = await client.query<{ id: string }>(
          `SELECT id FROM webhook_deliveries WHERE status = 'cancelled' AND superseded_by = $1 ORDER BY id`,
          [resend],
        );
        const stillPending = await client.query('SELECT 1 FROM webhook_deliveries WHERE id = $1 AND status = $2', [
          elsewhere,
          'pending',
        ]);
        return {
          read: read.deliveries,
          ended: ended.rows.map((row) => row.id),
          elsewhereKept: stillPending.rowCount === 1,
        };
      });
      most = Math.max(most, outcome.read);
      // The event's deliveries to the endpoint, each read about twice (found, then updated); reading the endpoint's
      // log (its other events, delivered or pending) is thousands.
      const bound = 3 * (2 + c.otherResends.length) + 4;
      return (
        JSON.stringify(outcome.ended) === JSON.stringify(expected) && outcome.elsewhereKept && outcome.read <= bound
      );
    }),
    12,
    // 2026-11-29: the succeeded resend's creation time read by a join the planner scanned for on stale statistics.
    [1529852743],
  );
  t.comment(`most rows read by one superseding statement: ${most}`);
});

t.test('resuming an endpoint schedules what it held in order, reading only that, not its log', async (t) => {
  const client = await connection(t);
  let most = 0;
  await checkProperty(
    t,
    'resume reads',
    fc.asyncProperty(
      fc.record({
        delivered: fc.integer({ min: 2_000, max: 4_000 }),
        held: fc.integer({ min: 0, max: 100 }),
        analyzed: fc.constantFrom<'before the burst' | 'on the log'>('before the burst', 'on the log'),
      }),
      async ({ delivered, held, analyzed }) => {
        await clearWebhookRows(client);
        const tenantId = randomUUID();
        const endpointId = await insertEndpointRow(client, tenantId, NOW, 'lead.created');
        // The log first, then what the endpoint held while paused (due long ago), each created a millisecond apart. What
        // it held is a few per cent of its log: a plan may rightly read a whole small log to find a large share of it.
        const insert = (count: number, status: string, from: number) =>
          client.query(
            `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status,
                                             next_attempt_at, created_at, updated_at)
             SELECT gen_random_uuid(), gen_random_uuid(), $1, $2, false, 'lead.created', $3, $4::text,
                    CASE WHEN $4::text = 'pending' THEN $5::timestamptz - interval '1 hour' END,
                    $5::timestamptz - make_interval(secs => 7200 - (g + $6::int) / 1000.0), $5
               FROM generate_series(1, $7::int) g`,
            [endpointId, tenantId, BODY, status, NOW, from, count],
          );
        await insert(delivered, 'succeeded', 0);
        if (analyzed === 'before the burst') await client.query('ANALYZE webhook_deliveries');
        await insert(held, 'pending', delivered);
        if (analyzed === 'on the log') await client.query('ANALYZE webhook_deliveries');
        const perSecond = 50;
        const { text, values } = resumedBacklogStatement(endpointId, NOW, perSecond);
        const outcome = await rolledBack(client, async () => {
          const read = await rowsRead(client, text, values);
          const scheduled = await client.query<{ offset_ms: number }>(
            `SELECT (extract(epoch FROM next_attempt_at - $2::timestamptz) * 1000)::int AS offset_ms
               FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending' ORDER BY created_at, id`,
            [endpointId, NOW],
          );
          return { read: read.deliveries, offsets: scheduled.rows.map((row) => row.offset_ms) };
        });
        most = Math.max(most, outcome.read);
        // Oldest first, one every 1/perSecond seconds from now.
        const inOrder = outcome.offsets.every((offset, i) => offset === Math.round((i * 1000) / perSecond));
        // Each held delivery read twice (picked, then updated); the endpoint's log is thousands.
        return outcome.offsets.length === held && inOrder && outcome.read <= 2 * held + 8;
      },
    ),
    12,
  );
  t.comment(`most rows read by one resume: ${most}`);
});
