import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { failingSince } from '../../src/console/queries/webhooks.js';
import { listDeliveries } from '../../src/webhooks/deliveries.js';
import {
  DELIVERY_FILTERS,
  deliveryState,
  eventPatterns,
  isFailing,
  type DeliveryFacts,
} from '../../src/webhooks/delivery-state.js';
import { freshDatabase } from '../support/db.js';
import { checkProperty } from '../support/properties.js';
import { clearWebhookRows, insertEndpointRow } from './support/endpoint-rows.js';

const NOW = new Date('2026-11-20T12:00:00Z');

t.test('deliveryState: every stored status and endpoint state in the receiver’s words', async (t) => {
  const d = (over: Partial<DeliveryFacts>): DeliveryFacts => ({
    status: 'pending',
    attempts: 0,
    event: 'lead.created',
    next_attempt_at: null,
    superseded_by: null,
    ...over,
  });
  t.same(deliveryState(d({}), false), { kind: 'queued' });
  t.same(deliveryState(d({ attempts: 2, next_attempt_at: 'x' }), false), {
    kind: 'retrying',
    attempts: 2,
    nextAttemptAt: 'x',
  });
  t.same(deliveryState(d({ attempts: 2 }), true), { kind: 'waiting', attempts: 2 }, 'held by a pause, not "pending"');
  t.same(deliveryState(d({ attempts: 1, event: 'webhook.test' }), true).kind, 'retrying', 'tests are sent anyway');
  t.same(deliveryState(d({ status: 'failed', attempts: 7 }), false), { kind: 'failed', attempts: 7 });
  t.same(deliveryState(d({ status: 'cancelled', superseded_by: 'r' }), true), { kind: 'cancelled', supersededBy: 'r' });
  t.ok(isFailing(deliveryState(d({ attempts: 1 }), true)), 'held after a failure: failing');
  t.notOk(isFailing(deliveryState(d({}), true)), 'held before any attempt: not failing');
});

const row = fc.record({
  status: fc.constantFrom('pending', 'succeeded', 'failed', 'cancelled'),
  attempts: fc.integer({ min: 0, max: 7 }),
  event: fc.constantFrom('lead.created', 'lead.lost', 'webhook.test', 'document.uploaded', 'lead_x'),
  superseded: fc.boolean(),
});

t.test('the log filters and "retry failed" select exactly the deliveries in their state', async (t) => {
  const { pool } = await freshDatabase(t);
  const tenantId = randomUUID();
  await checkProperty(
    t,
    'SQL filters agree with deliveryState',
    fc.asyncProperty(fc.array(row, { minLength: 1, maxLength: 25 }), fc.boolean(), async (rows, paused) => {
      await clearWebhookRows(pool);
      const endpointId = await insertEndpointRow(pool, tenantId, NOW);
      const facts = new Map<string, DeliveryFacts>();
      for (const [i, r] of rows.entries()) {
        const id = randomUUID();
        const at = new Date(NOW.getTime() - (i + 1) * 1000);
        const next = r.status === 'pending' ? new Date(NOW.getTime() + 60_000) : null;
        const supersededBy = r.status === 'cancelled' && r.superseded ? randomUUID() : null;
        await pool.query(
          `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status, attempts,
                                           next_attempt_at, superseded_by, created_at, updated_at)
           VALUES ($1, $2, $3, $4, false, $5, '{}', $6, $7, $8, $9, $10, $10)`,
          [id, randomUUID(), endpointId, tenantId, r.event, r.status, r.attempts, next, supersededBy, at],
        );
        facts.set(id, {
          status: r.status,
          attempts: r.attempts,
          event: r.event,
          next_attempt_at: next?.toISOString() ?? null,
          superseded_by: supersededBy,
        });
      }
      for (const filter of DELIVERY_FILTERS) {
        const listed = await listDeliveries(pool, endpointId, {
          limit: 100,
          now: NOW,
          state: { filter, endpointPaused: paused },
        });
        const expected = [...facts]
          .filter(([, f]) => {
            const state = deliveryState(f, paused);
            return filter === 'failing' ? isFailing(state) : state.kind === filter;
          })
          .map(([id]) => id)
          .sort();
        if (JSON.stringify(listed.data.map((d) => d.id).sort()) !== JSON.stringify(expected))
          throw new Error(`filter ${filter} (paused ${paused}) selected other deliveries`);
      }
      // "Retry failed": the failing ones (whatever the pause), each once.
      const retry = (await failingSince(pool, endpointId, new Date(0))).sort();
      const failing = [...facts].filter(([, f]) => isFailing(deliveryState(f, true)));
      if (JSON.stringify(retry) !== JSON.stringify(failing.map(([id]) => id).sort()))
        throw new Error('retry failed counts other deliveries than the failing filter');
      return true;
    }),
    40,
  );
});

t.test('event patterns: a prefix with *, a list, LIKE wildcards literal', async (t) => {
  t.same(eventPatterns('lead.*'), ['lead.%']);
  t.same(eventPatterns('lead.created, document.uploaded'), ['lead.created', 'document.uploaded']);
  t.same(eventPatterns('lead_%'), ['lead\\_\\%']);
  const { pool } = await freshDatabase(t);
  await checkProperty(
    t,
    'in PostgreSQL, a prefix pattern matches exactly the kinds that start with it',
    fc.asyncProperty(
      fc.string({ minLength: 1, maxLength: 8 }).filter((p) => !/[\s,*]/.test(p) && !p.includes('\u0000')),
      fc.array(
        fc.string({ maxLength: 10 }).filter((k) => !k.includes('\u0000')),
        { maxLength: 8 },
      ),
      async (prefix, kinds) => {
        const [pattern] = eventPatterns(`${prefix}*`);
        const matched = await pool.query<{ k: string }>('SELECT k FROM unnest($1::text[]) k WHERE k LIKE ANY ($2)', [
          kinds,
          [pattern],
        ]);
        const expected = kinds.filter((k) => k.startsWith(prefix));
        return JSON.stringify(matched.rows.map((r) => r.k).sort()) === JSON.stringify(expected.sort());
      },
    ),
    200,
  );
});
