/**
 * bench:events: the Events API on a workspace with BENCH_EVENTS stored events (default 1,000,000), one client.
 * Goal: a page of 100 events in under 20 ms at p99 (GET /v1/events?limit=100). Printed beside the same page's query
 * alone (readEventFeed on the pool), so what HTTP, authentication and rate limiting add is visible.
 *
 * The seeder writes events straight into the log in SQL batches (never the import path): a mix of webhook kinds and
 * internal kinds over the last 29 days, unsealed, with a placeholder hash per event (the bench's own database is
 * never verified). Usage: `npm run bench:events`; BENCH_EVENTS, BENCH_SECONDS (default 10) shorten it.
 */
import { buildApp } from '../src/http/app.js';
import { kindsOf, readEventFeed, type EventFeedQuery } from '../src/webhooks/event-feed.js';
import { CURRENT_PAYLOAD_VERSION } from '../src/webhooks/versions/index.js';
import { benchDatabase, benchServices, measure, row, unlimitedWorkspace } from './support.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const BATCH = 100_000;
const GOAL_P99_MS = 20;

// One in five is internal (never listed), as enquiries and notes are among a real workspace's lead events.
const SEED_SQL = `
INSERT INTO events (id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at, hash)
SELECT gen_random_uuid(), 'bench-' || ((g - 1) / 5), (g - 1) % 5,
       (ARRAY['lead.created', 'lead.updated', 'lead.enquiry_received', 'application.stage_changed', 'task.overdue'])[1 + (g - 1) % 5],
       $1, false,
       jsonb_build_object('payload', jsonb_build_object('id', gen_random_uuid(), 'full_name', 'Seeded Person ' || g,
         'email', 'seed-' || g || '@example.com', 'phone', '+919' || lpad(g::text, 9, '0'), 'stage', 'new',
         'source', 'api', 'note', repeat('x', 300))),
       '{"actor": {"type": "system", "name": "bench:events"}}'::jsonb,
       $2::timestamptz + make_interval(secs => g * $3::float8),
       sha256(g::text::bytea)
  FROM generate_series($4::bigint, $5::bigint) g`;

async function main(): Promise<void> {
  const db = await benchDatabase(10);
  const services = await benchServices(db);
  const { workspace, key } = await unlimitedWorkspace(services, 'bench-events', 'bench:events');
  const now = services.now();
  const start = new Date(now.getTime() - 29 * 24 * 3600 * 1000);
  const step = (29 * 24 * 3600) / EVENTS;
  const seeded = performance.now();
  for (let from = 1; from <= EVENTS; from += BATCH) {
    await db.pool.query(SEED_SQL, [workspace.id, start, step, from, Math.min(EVENTS, from + BATCH - 1)]);
    process.stderr.write(
      `\rseeded ${Math.min(EVENTS, from + BATCH - 1).toLocaleString()} of ${EVENTS.toLocaleString()}`,
    );
  }
  await db.pool.query('ANALYZE events');
  console.error(
    `\nseeded ${EVENTS.toLocaleString()} events in ${((performance.now() - seeded) / 1000).toFixed(1)} s (${db.where})`,
  );

  const app = await buildApp(services, { logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const page = async (query: string) => {
    const response = await fetch(`${base}/v1/events?${query}`, { headers: { authorization: `Bearer ${key.value}` } });
    if (response.status !== 200) throw new Error(`${response.status} ${await response.text()}`);
    await response.arrayBuffer();
  };
  const weekAgo = new Date(now.getTime() - 7 * 24 * 3600 * 1000).toISOString();
  type Step = [string, string, Pick<EventFeedQuery, 'order' | 'kinds' | 'createdGte' | 'limit'>];
  const steps: Step[] = [
    ['newest 100', 'limit=100', { order: 'desc', kinds: kindsOf([]).kinds, limit: 100 }],
    [
      'oldest 100 since a week ago',
      `limit=100&order=asc&created[gte]=${encodeURIComponent(weekAgo)}`,
      { order: 'asc', kinds: kindsOf([]).kinds, createdGte: new Date(weekAgo), limit: 100 },
    ],
    [
      'newest 100 of application.*',
      'limit=100&types=application.*',
      { order: 'desc', kinds: kindsOf(['application.*']).kinds, limit: 100 },
    ],
  ];
  console.log(
    `bench:events — ${EVENTS.toLocaleString()} events, one client, ${SECONDS} s a step (goal: p99 < ${GOAL_P99_MS} ms)`,
  );
  for (const [label, query, feed] of steps) {
    await page(query);
    const http = await measure(1_000_000, 1, SECONDS, () => page(query));
    const alone = await measure(1_000_000, 1, SECONDS, () =>
      readEventFeed(db.pool, services.personalData, {
        ...feed,
        tenantId: workspace.id,
        sandbox: false,
        now: services.now(),
        version: CURRENT_PAYLOAD_VERSION,
      }),
    );
    const verdict = http.p99 < GOAL_P99_MS ? 'met' : 'missed';
    console.log(row(`GET /v1/events ${label}`, http) + `   goal p99 < ${GOAL_P99_MS} ms: ${verdict}`);
    console.log(row(`  the query alone`, alone));
  }
  await app.close();
  await db.close();
}

await main();
