import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import type { AppServices } from '../../src/bootstrap.js';
import { replayEndpointEvents, type ReplayRequest } from '../../src/commands/webhooks/replay.js';
import type { CommandContext } from '../../src/events/types.js';
import type { RateLimitStore } from '../../src/ratelimit/token-bucket.js';
import { fanOutBatch } from '../../src/subscribers/webhook-fanout.js';
import { TestClock } from '../support/app.js';
import { checkProperty } from '../support/properties.js';
import { resourcePayload, webhookHarness } from './support/harness.js';
import { sleep } from './support/receiver.js';

// For random event histories and windows, a replay queues exactly the endpoint's events of the window (and of the
// kinds asked for, among those it subscribes to), in event order, each once. Real PostgreSQL, the real fan-out; no
// delivery worker runs, so what the replay queued stays in place to be read.

const KINDS = ['document.uploaded', 'document.rejected'] as const;

/** Replays are rate-limited per endpoint; this property makes many of them, which the limit is not what it tests. */
const unlimited: RateLimitStore = {
  take: async () => ({
    allowed: true,
    constrained: { scope: 'webhook_replay', limit: 1, remaining: 1, resetSeconds: 0 },
    retryAfterSeconds: 0,
  }),
  peek: async () => ({
    allowed: true,
    constrained: { scope: 'webhook_replay', limit: 1, remaining: 1, resetSeconds: 0 },
    retryAfterSeconds: 0,
  }),
  close: async () => undefined,
};

t.test('a replay queues exactly the window’s events of the kinds asked for, in order, once', async (t) => {
  t.setTimeout(600_000);
  const clock = new TestClock(new Date());
  const h = await webhookHarness(t, { now: clock.now });
  const both = await h.createEndpoint({ url: h.receiver.url(), events: [...KINDS] });
  const uploadsOnly = await h.createEndpoint({ url: h.receiver.url('127.0.0.1', '/u'), events: ['document.uploaded'] });
  const endpoints = [
    { id: both.id, kinds: [...KINDS] as string[] },
    { id: uploadsOnly.id, kinds: ['document.uploaded'] },
  ];
  const services: AppServices = { ...h.services, rateLimits: unlimited };
  // The fan-out's first step only creates its checkpoint.
  await fanOutBatch(h.pool, h.services.personalData, clock.now());
  /** Every event appended so far, in log order, with its time. */
  const history: { id: string; kind: string; at: number }[] = [];

  const property = fc.asyncProperty(
    fc.array(fc.record({ kind: fc.constantFrom(...KINDS), gapMs: fc.integer({ min: 1, max: 120_000 }) }), {
      minLength: 0,
      maxLength: 12,
    }),
    fc.integer({ min: 0, max: 1 }),
    // The window: each bound either an event's exact time (the bounds' edges) or a moment between them.
    fc.record({
      since: fc.oneof(fc.nat(), fc.integer({ min: -1_000_000, max: 1_000_000 })),
      sinceExact: fc.boolean(),
      length: fc.option(fc.integer({ min: 1, max: 2_000_000 })),
      untilExact: fc.boolean(),
    }),
    fc.option(fc.subarray([...KINDS], { minLength: 1 })),
    async (appended, which, window, kinds) => {
      for (const e of appended) {
        clock.advance(e.gapMs);
        const event = await h.appendEvent(e.kind, resourcePayload());
        history.push({ id: event.id, kind: e.kind, at: clock.now().getTime() });
      }
      // The fan-out reads only below the server's oldest running transaction (other databases' too): it is run
      // until every event appended has its deliveries, one per subscribed endpoint.
      const ids = history.slice(history.length - appended.length).map((e) => e.id);
      const originals = appended.reduce((n, e) => n + endpoints.filter((p) => p.kinds.includes(e.kind)).length, 0);
      for (;;) {
        await fanOutBatch(h.pool, h.services.personalData, clock.now());
        const made = await h.pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM webhook_deliveries WHERE event_id = ANY ($1::uuid[]) AND resend_of IS NULL',
          [ids],
        );
        if (made.rows[0]!.n >= originals) break;
        await sleep(20);
      }
      clock.advance(1000);
      const now = clock.now().getTime();
      const endpoint = endpoints[which]!;
      const pick = (n: number) => history[Math.abs(n) % history.length]!.at;
      const since =
        window.sinceExact && history.length > 0
          ? pick(window.since)
          : Math.max(now - 29 * 86_400_000, now - 600_000 + (window.since % 600_000));
      const until =
        window.length === null
          ? undefined
          : window.untilExact && history.length > 0 && pick(window.length) > since
            ? pick(window.length)
            : since + window.length;
      const asked = kinds?.filter((k) => endpoint.kinds.includes(k));
      const request: ReplayRequest = {
        since: new Date(since).toISOString(),
        ...(until !== undefined ? { until: new Date(until).toISOString() } : {}),
        ...(asked && asked.length > 0 ? { kinds: asked } : {}),
      };
      if (since >= now) return; // refused as a window in the future (the window test covers it)
      const end = Math.min(until ?? now, now);
      const wanted = new Set(request.kinds ?? endpoint.kinds);
      const expected = history.filter((e) => e.at >= since && e.at < end && wanted.has(e.kind)).map((e) => e.id);

      const context: CommandContext = {
        tenantId: h.ws.workspace.id,
        sandbox: false,
        metadata: { actor: { type: 'system', name: 'replay property' }, correlation_id: randomUUID() },
        now: clock.now(),
      };
      const summary = await replayEndpointEvents(services, context, endpoint.id, request, null);
      const queued = await h.pool.query<{ event_id: string }>(
        `SELECT event_id FROM webhook_deliveries
          WHERE endpoint_id = $1 AND resend_of IS NOT NULL AND created_at >= $2 ORDER BY created_at`,
        [endpoint.id, context.now],
      );
      clock.advance(1000);
      const got = queued.rows.map((r) => r.event_id);
      if (summary.queued !== expected.length || JSON.stringify(got) !== JSON.stringify(expected))
        throw new Error(
          `window [${request.since}, ${request.until ?? 'now'}) kinds ${String(request.kinds)} on endpoint ${which}: ` +
            `expected ${JSON.stringify(expected)}, queued ${summary.queued}: ${JSON.stringify(got)}`,
        );
    },
  );
  await checkProperty(t, 'replay windows', property, 25);
});
