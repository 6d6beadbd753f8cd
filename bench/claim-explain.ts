// The webhook claim statement on its own, with a backlog: EXPLAIN (ANALYZE, BUFFERS) of one claim over ~20,000 pending
// deliveries across a few tenants, then claim-and-record rounds as a worker would run them (claim 128, record them
// as delivered) with each claim's time, then EXPLAIN again once the rounds have left dead rows behind.
// Run: node --import ./scripts/typescript-resolve.mjs bench/claim-explain.ts   (uses DATABASE_URL, else an embedded PostgreSQL). BENCH_CLAIM_PLAN=1 prints the
// plans. Nothing is claimed by the EXPLAINs: they run in a transaction that is rolled back.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { claimDueDeliveries, claimIn, type ClaimLimits, type ClaimedDelivery } from '../src/webhooks/claims.js';
import { recordAttempts } from '../src/webhooks/deliveries.js';
import { benchDatabase, postgresCpuMs } from './support.js';

// BENCH_CLAIM_TENANTS: per tenant, endpoints x deliveries (bench:webhooks' throughput step is "1x20000").
const TENANTS = (process.env.BENCH_CLAIM_TENANTS ?? '1x14000,3x2000,5x2000,20x2000').split(',').map((tenant) => {
  const [endpoints, deliveries] = tenant.split('x').map(Number);
  return { endpoints: endpoints!, deliveries: deliveries! };
});
const ROUNDS = Number(process.env.BENCH_CLAIM_ROUNDS ?? 100);
// BENCH_RECORD_BATCH: attempts per recording statement (bench:webhooks' worker recorded about 8 per statement).
const RECORD_BATCH = Number(process.env.BENCH_RECORD_BATCH ?? 8);
// BENCH_CLAIM_LIMIT: the worker's free slots at each claim (bench:webhooks' worker claimed 28 on average).
const LIMITS: ClaimLimits = {
  limit: Number(process.env.BENCH_CLAIM_LIMIT ?? 128),
  perEndpoint: 16,
  perFastEndpoint: 64,
  perTenant: 64,
};

async function seed(pool: pg.Pool, start: Date): Promise<void> {
  for (const tenant of TENANTS) {
    const tenantId = randomUUID();
    for (let e = 0; e < tenant.endpoints; e++) {
      const id = randomUUID();
      await pool.query(
        `INSERT INTO webhook_endpoints (id, tenant_id, sandbox, url, events, status, sealed_secret, created_at, updated_at, created_tx_id, created_position)
         VALUES ($1, $2, false, 'https://hooks.test/in', '{lead.created}', 'active', 'sealed', $3, $3, '1', 1)`,
        [id, tenantId, start],
      );
      await pool.query('INSERT INTO webhook_endpoint_health (endpoint_id) VALUES ($1)', [id]);
      await pool.query(
        `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status, next_attempt_at, created_at, updated_at)
         SELECT gen_random_uuid(), gen_random_uuid(), $1, $2, false, 'lead.created', repeat('x', 600), 'pending',
                $3::timestamptz + make_interval(secs => g / 1000.0), $3::timestamptz + make_interval(secs => g / 1000.0), $3
           FROM generate_series(1, $4) g`,
        [id, tenantId, start, Math.ceil(tenant.deliveries / tenant.endpoints)],
      );
    }
  }
  await pool.query('ANALYZE webhook_deliveries, webhook_endpoints, webhook_endpoint_health');
}

async function explain(pool: pg.Pool, at: Date, label: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    let step = 0;
    // Each step of the claim explained (in a savepoint rolled back), then run, so the next step sees its effect.
    const sql = {
      async query<R extends pg.QueryResultRow>(text: string, values: unknown[] = []) {
        await client.query('SAVEPOINT explained');
        const plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, values);
        await client.query('ROLLBACK TO SAVEPOINT explained');
        const lines = plan.rows.map((r) => r['QUERY PLAN']);
        console.log(
          `\n${label}, step ${++step}: ${lines.filter((l) => /Execution Time|Planning Time/.test(l)).join(', ')}, ${lines.find((l) => /Buffers/.test(l))?.trim()}`,
        );
        if (process.env.BENCH_CLAIM_PLAN) console.log(lines.join('\n'));
        return client.query<R>(text, values);
      },
    };
    await claimIn(sql, { owner: 'explain', now: at, leaseUntil: new Date(at.getTime() + 15_000), limits: LIMITS });
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** PostgreSQL CPU ms (all local server processes) that `work` cost, added to `into.ms`; 0 when the server is remote. */
async function pgCpu<T>(into: { ms: number }, work: () => Promise<T>): Promise<T> {
  const before = postgresCpuMs();
  const result = await work();
  const after = postgresCpuMs();
  if (before && after) for (const [key, ms] of after) into.ms += ms - (before.get(key) ?? 0);
  return result;
}

async function rounds(pool: pg.Pool, start: Date): Promise<void> {
  const times: number[] = [];
  let delivered = 0;
  let previous: ClaimedDelivery[] = [];
  const claimCpu = { ms: 0 };
  const recordCpu = { ms: 0 };
  let records = 0;
  for (let round = 0; round < ROUNDS; round++) {
    // The clock moves 10 ms a round; what a round claimed is recorded as delivered after the next round's claim, so
    // leases are in flight at each claim, as in a running worker.
    const at = new Date(start.getTime() + 60_000 + round * 10);
    const began = performance.now();
    const claimed = await pgCpu(claimCpu, () =>
      claimDueDeliveries(pool, 'w', at, new Date(at.getTime() + 15_000), LIMITS),
    );
    times.push(performance.now() - began);
    // Recorded RECORD_BATCH at a time: the worker records its finished attempts in statements of about 8.
    for (let i = 0; i < previous.length; i += RECORD_BATCH) {
      records++;
      await pgCpu(recordCpu, () => record(pool, previous.slice(i, i + RECORD_BATCH), at));
    }
    delivered += claimed.length;
    previous = claimed;
  }
  times.sort((a, b) => a - b);
  console.log(
    `\n${ROUNDS} claim rounds (${delivered} delivered): claim p50 ${percentile(times, 50).toFixed(1)} ms, p99 ${percentile(times, 99).toFixed(1)} ms, max ${times.at(-1)!.toFixed(1)} ms`,
  );
  console.log(
    `PostgreSQL CPU (whole server, so only meaningful on an idle machine): ${(claimCpu.ms / ROUNDS).toFixed(2)} ms per claim, ` +
      `${(recordCpu.ms / Math.max(1, records)).toFixed(2)} ms per recording statement of up to ${RECORD_BATCH}; ` +
      `per delivery ${((claimCpu.ms + recordCpu.ms) / Math.max(1, delivered)).toFixed(3)} ms`,
  );
}

function record(pool: pg.Pool, deliveries: ClaimedDelivery[], at: Date) {
  return recordAttempts(
    pool,
    'w',
    deliveries.map((d) => ({
      deliveryId: d.id,
      leaseUntil: d.lease_until,
      attempt: d.attempts + 1,
      ok: true,
      nextAttemptAt: null,
      attemptedAt: at,
      finishedAt: at,
      requestHeaders: {},
      responseStatus: 200,
      responseHeaders: null,
      responseBody: null,
      durationMs: 5,
      error: null,
    })),
    // Prepared by name, as the worker does on a connection straight to PostgreSQL (BENCH_RECORD_UNNAMED=1: as behind a pooler).
    { named: !process.env.BENCH_RECORD_UNNAMED },
  );
}

const db = await benchDatabase(5);
try {
  const start = new Date('2026-11-24T00:00:00.000Z');
  await seed(db.pool, start);
  await explain(db.pool, new Date(start.getTime() + 60_000), 'fresh backlog');
  await rounds(db.pool, start);
  await explain(db.pool, new Date(start.getTime() + 60_000 + ROUNDS * 10), `after ${ROUNDS} rounds`);
} finally {
  await db.close();
}
