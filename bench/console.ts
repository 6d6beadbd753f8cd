// The console's pages on a busy workspace: 100,000 leads (live lead.created events, plus 1,000 sandbox
// ones of a test key) and 100,000 deliveries on one endpoint; each page asked for by one signed-in member, one request
// at a time, p50 and p99, beside the same page's database reads alone.
// Run: npm run bench:console   (DATABASE_URL, else an embedded PostgreSQL). BENCH_CONSOLE_SECONDS per page (10).
import { randomUUID } from 'node:crypto';
import { listDeletedEndpoints, recentAttemptOutcomes } from '../src/console/queries/webhooks.js';
import { buildApp } from '../src/http/app.js';
import { listAccessTokens } from '../src/identity/access-tokens.js';
import { membershipsOf } from '../src/identity/members.js';
import { listSessions } from '../src/identity/sessions.js';
import { createKey, listKeys } from '../src/keys/repository.js';
import { sandboxSubmissions } from '../src/projections/leads-queries.js';
import { findEndpoint, listAllEndpoints } from '../src/projections/webhook-endpoints.js';
import { listDeliveries } from '../src/webhooks/deliveries.js';
import { applyDefinition } from '../src/workspaces/repository.js';
import { demoDefinition } from '../test/support/app.js';
import { benchDatabase, benchServices, consoleCookie, consoleOwner, measure, row } from './support.js';

const LEADS = 100_000;
const DELIVERIES = 100_000;
const SECONDS = Number(process.env.BENCH_CONSOLE_SECONDS ?? 10);
const PASSWORD = 'a bench password of some length';

const db = await benchDatabase(20);
const services = await benchServices(db);
const app = await buildApp(services, { logger: false });
await app.listen({ host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;

const { workspace } = await applyDefinition(db.pool, demoDefinition({ slug: 'bench-console' }), services.secretBox);
const { owner, account } = await consoleOwner(db.pool, workspace, PASSWORD);
const testKey = await createKey(db.pool, {
  tenantId: workspace.id,
  name: 'bench test key',
  kind: 'secret',
  mode: 'test',
  scopes: ['leads:create'],
});

console.log(`Seeding ${LEADS} leads and ${DELIVERIES} deliveries (${db.where})…`);
const leadData = JSON.stringify({ payload: { full_name: 'Bench Person', email: 'bench@example.org' } });
const insertEvents = (count: number, sandbox: boolean, metadata: object, offset: number) =>
  db.pool.query(
    `INSERT INTO events (position, tx_id, id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at, hash)
     OVERRIDING SYSTEM VALUE
     SELECT $5::bigint + g, ($5::bigint + g)::text::xid8, gen_random_uuid(), 'lead-' || gen_random_uuid(), 0, 'lead.created',
            $2, $3, $4::jsonb, $6::jsonb, now(), sha256(int8send(g))
       FROM generate_series(1, $1::bigint) AS g`,
    [count, workspace.id, sandbox, leadData, offset, JSON.stringify(metadata)],
  );
await insertEvents(LEADS, false, { actor: { type: 'key', key_id: randomUUID() }, correlation_id: 'bench' }, 1_000_000);
await insertEvents(
  1_000,
  true,
  { actor: { type: 'key', key_id: testKey.record.id }, correlation_id: 'bench' },
  2_000_000,
);
const endpointId = randomUUID();
await db.pool.query(
  `INSERT INTO webhook_endpoints (id, tenant_id, sandbox, url, events, status, sealed_secret, created_at, updated_at, created_tx_id, created_position)
   VALUES ($1, $2, false, 'https://hooks.example.com/in', '{lead.created}', 'active', 'sealed', now(), now(), '1', 1)`,
  [endpointId, workspace.id],
);
await db.pool.query('INSERT INTO webhook_endpoint_health (endpoint_id) VALUES ($1)', [endpointId]);
await db.pool.query(
  `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status, attempts, created_at, updated_at)
   SELECT gen_random_uuid(), gen_random_uuid(), $1, $2, false, 'lead.created', repeat('x', 600),
          (ARRAY['succeeded', 'succeeded', 'succeeded', 'failed'])[1 + g % 4], 1,
          now() - make_interval(secs => g * 20.0), now() - make_interval(secs => g * 20.0)
     FROM generate_series(1, $3) g`,
  [endpointId, workspace.id, DELIVERIES],
);
await db.pool.query('VACUUM ANALYZE events, webhook_deliveries, webhook_endpoints');

const cookie = await consoleCookie(base, owner.email, PASSWORD);
const now = () => new Date();
const w = `/console/w/${workspace.slug}`;
const pages: { name: string; path: string; reads: () => Promise<unknown> }[] = [
  { name: 'workspaces', path: '/console', reads: () => membershipsOf(db.pool, owner.email) },
  { name: 'API keys', path: `${w}/keys`, reads: () => listKeys(db.pool, workspace.id) },
  {
    name: "a test key's sandbox submissions",
    path: `${w}/keys/${testKey.record.id}`,
    reads: async () => [
      await listKeys(db.pool, workspace.id),
      await sandboxSubmissions(db.pool, services.personalData, workspace.id, testKey.record.id),
    ],
  },
  {
    name: 'webhook endpoints',
    path: `${w}/webhooks`,
    reads: async () => [
      await listAllEndpoints(db.pool, workspace.id),
      await recentAttemptOutcomes(db.pool, workspace.id, now()),
      await listDeletedEndpoints(db.pool, workspace.id, now()),
    ],
  },
  {
    name: "an endpoint's delivery log",
    path: `${w}/webhooks/${endpointId}`,
    reads: async () => [
      await findEndpoint(db.pool, workspace.id, endpointId),
      await listDeliveries(db.pool, endpointId, { limit: 50, now: now() }),
    ],
  },
  {
    name: 'the log filtered to failed',
    path: `${w}/webhooks/${endpointId}?status=failed`,
    reads: () => listDeliveries(db.pool, endpointId, { limit: 50, now: now(), status: 'failed' }),
  },
  { name: 'members', path: `${w}/members`, reads: () => membershipsOf(db.pool, owner.email) },
  {
    name: 'account',
    path: '/console/account',
    reads: async () => [await listSessions(db.pool, account.id), await listAccessTokens(db.pool, account.id)],
  },
];

console.log(`\nOne member, one request at a time, ${SECONDS} s per page:`);
for (const page of pages) {
  const answers = await measure(1_000_000, 1, SECONDS, async () => {
    const response = await fetch(base + page.path, { headers: { cookie } });
    if (response.status !== 200) throw new Error(`${page.path} answered ${response.status}`);
    await response.arrayBuffer();
  });
  const reads = await measure(1_000_000, 1, SECONDS / 2, page.reads);
  console.log(row(`${page.name}: page`, answers));
  console.log(row(`${page.name}: its database reads alone`, reads));
}
await app.close();
await services.rateLimits.close();
await services.keys.close();
await db.close();
