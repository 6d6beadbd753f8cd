// Webhook delivery benchmark: deliveries per second to a local HTTPS receiver from each backlog in BENCH_BACKLOGS
// (default 1,000, 20,000 and 100,000), with the CPU of this process and of PostgreSQL per delivery and the rows
// written per delivery, and the time from a command's commit to the receiver's acknowledgement (p50, p99) at a steady
// 500 events/s, beside a plain HTTPS POST loop to the same receiver in the same run. The receiver runs in a child
// process, so it does not share this process's thread.
// Run: npm run bench:webhooks   (uses DATABASE_URL, else an embedded PostgreSQL). Everything stays on 127.0.0.1.
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import type http from 'node:http';
import type pg from 'pg';
import https from 'node:https';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { createServices, type AppServices } from '../src/bootstrap.js';
import { createEndpoint } from '../src/commands/webhooks/endpoints.js';
import { runCommand } from '../src/commands/run-command.js';
import { loadConfig } from '../src/config.js';
import { PostgresEventStore } from '../src/events/postgres-event-store.js';
import type { CommandContext } from '../src/events/types.js';
import { webhookEndpointsProjection } from '../src/projections/webhook-endpoints.js';
import { startWorkers } from '../src/subscribers/index.js';
import { configureWebhookRuntime } from '../src/webhooks/runtime.js';
import { DEFAULT_FAST_ENDPOINT_IN_FLIGHT, DEFAULT_PER_TENANT_IN_FLIGHT } from '../src/webhooks/claims.js';
import { demoDefinition } from '../test/support/app.js';
import { makeTestPki } from '../test/webhooks/support/tls.js';
import { applyDefinition } from '../src/workspaces/repository.js';
import { createDeliveryTwinTables, runDeliveryTwin } from './delivery-twin.js';
import { benchDatabase, postgresCpuMs, printHotShare, withCpuCost, WRITTEN_TABLES, type CpuCost } from './support.js';

const now = () => performance.timeOrigin + performance.now();

if (process.env.BENCH_ROLE === 'receiver') {
  // The receiver: answers 200 at once and reports each event id's acknowledgement time to the parent.
  const acks: [string, number][] = [];
  const handler: http.RequestListener = (req, res) => {
    req.resume();
    req.on('end', () => {
      // The noisy neighbours: /hang never answers (the delivery times out at 10 s), /slow answers after 9 s.
      if (req.url === '/hang') return;
      if (req.url === '/slow') {
        setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'), 9_000);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      const id = req.headers['webhook-id'];
      if (typeof id === 'string') acks.push([id, now()]);
    });
  };
  // One server per tenant's host: a noisy endpoint then holds sockets of its own target only, as in production, where
  // tenants' receivers are different hosts (the delivery client caps its sockets per target).
  const listening = ['healthy', 'hang', 'slow'].map((name) => {
    const server = https.createServer(
      { key: process.env.BENCH_KEY!, cert: process.env.BENCH_CERT!, keepAliveTimeout: 60_000 },
      handler,
    );
    server.maxRequestsPerSocket = 0;
    return new Promise<[string, number]>((resolve) =>
      server.listen(0, '127.0.0.1', () => resolve([name, (server.address() as { port: number }).port])),
    );
  });
  void Promise.all(listening).then((ports) => process.send!({ ports: Object.fromEntries(ports) }));
  setInterval(() => {
    if (acks.length > 0) process.send!({ acks: acks.splice(0) });
  }, 20);
  process.on('disconnect', () => process.exit(0));
} else {
  await main();
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** The delivery worker's claims so far, from the service's metrics: those that leased deliveries and those that found none. */
async function claimCounts(services: AppServices): Promise<{ claimed: number; empty: number }> {
  const values = (await services.metrics.deliveryClaims.get()).values;
  const count = (result: string) => values.find((v) => v.labels.result === result)?.value ?? 0;
  return { claimed: count('claimed'), empty: count('empty') };
}

/** Sums and counts of the worker's histograms of a slot's phases: its claim, its attempt, its outcome's recording. */
async function slotPhases(services: AppServices) {
  const read = async (histogram: { get(): Promise<{ values: { metricName?: string; value: number }[] }> }) => {
    const values = (await histogram.get()).values;
    const total = (suffix: string) =>
      values.filter((v) => v.metricName?.endsWith(suffix)).reduce((sum, v) => sum + v.value, 0);
    return { sum: total('_sum'), count: total('_count') };
  };
  const m = services.metrics;
  return {
    claim: await read(m.deliveryClaimDuration),
    attempt: await read(m.deliveryDuration),
    recording: await read(m.deliveryRecordingDelay),
  };
}
type SlotPhases = Awaited<ReturnType<typeof slotPhases>>;

/** Mean ms of each phase between two readings, and how many claims and attempts they cover. */
function slotPhasesSince(before: SlotPhases, after: SlotPhases) {
  const mean = (key: keyof SlotPhases) => {
    const count = after[key].count - before[key].count;
    return { ms: count === 0 ? 0 : ((after[key].sum - before[key].sum) * 1000) / count, count };
  };
  return { claim: mean('claim'), attempt: mean('attempt'), recording: mean('recording') };
}

async function main(): Promise<void> {
  const BASELINE_REQUESTS = Number(process.env.BENCH_BASELINE_REQUESTS ?? 20_000);
  // The backlogs the throughput is measured from, one after the other (BENCH_BACKLOGS=1000,20000 on a busy machine).
  const BACKLOGS = (process.env.BENCH_BACKLOGS ?? '1000,20000,100000').split(',').map(Number);
  const RATE = Number(process.env.BENCH_RATE ?? 500);
  const STEADY_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
  const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 128);
  // BENCH_PER_ENDPOINT overrides the per-endpoint in-flight cap, to see what it costs a single fast endpoint.
  // BENCH_FAST_ENDPOINT and BENCH_PER_TENANT override the caps of a proven fast endpoint and of a tenant.
  const perEndpoint = {
    ...(process.env.BENCH_PER_ENDPOINT ? { perEndpointConcurrency: Number(process.env.BENCH_PER_ENDPOINT) } : {}),
    ...(process.env.BENCH_FAST_ENDPOINT ? { fastEndpointConcurrency: Number(process.env.BENCH_FAST_ENDPOINT) } : {}),
    ...(process.env.BENCH_PER_TENANT ? { perTenantConcurrency: Number(process.env.BENCH_PER_TENANT) } : {}),
  };
  // The slots the throughput step's one fast endpoint may hold at once: its cap, its tenant's and the worker's.
  const fastCap = Math.min(
    Number(process.env.BENCH_FAST_ENDPOINT ?? process.env.BENCH_PER_ENDPOINT ?? DEFAULT_FAST_ENDPOINT_IN_FLIGHT),
    Number(process.env.BENCH_PER_TENANT ?? DEFAULT_PER_TENANT_IN_FLIGHT),
    CONCURRENCY,
  );
  const NOISY_SECONDS = Number(process.env.BENCH_NOISY_SECONDS ?? 30);
  const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 1);
  const NOISY_RATE = Number(process.env.BENCH_NOISY_RATE ?? 200);
  const NOISY_SLOW_RATE = Number(process.env.BENCH_NOISY_SLOW_RATE ?? 10);
  const NOISY_BACKLOG = Number(process.env.BENCH_NOISY_BACKLOG ?? 2_000);
  // The durable twin's loops and rows a transaction: 64 in flight, the service's cap for a proven fast endpoint.
  const TWIN_LOOPS = Number(process.env.BENCH_TWIN_LOOPS ?? 8);
  const TWIN_BATCH = Number(process.env.BENCH_TWIN_BATCH ?? 8);

  const pki = makeTestPki();
  const receiver: ChildProcess = fork(fileURLToPath(import.meta.url), [], {
    env: { ...process.env, BENCH_ROLE: 'receiver', BENCH_KEY: pki.key, BENCH_CERT: pki.cert },
  });
  const acked = new Map<string, number>();
  const ports = await new Promise<Record<'healthy' | 'hang' | 'slow', number>>((resolve) => {
    receiver.on(
      'message',
      (message: { ports?: Record<'healthy' | 'hang' | 'slow', number>; acks?: [string, number][] }) => {
        if (message.ports) resolve(message.ports);
        for (const [id, at] of message.acks ?? []) if (!acked.has(id)) acked.set(id, at);
      },
    );
  });
  const url = `https://127.0.0.1:${ports.healthy}/hooks`;
  const body = JSON.stringify({
    id: randomUUID(),
    event: 'lead.created',
    tenant_id: randomUUID(),
    created_at: new Date().toISOString(),
    data: payload(),
  });

  // 1. Baseline: a plain HTTPS POST loop, same receiver, same keep-alive pool size, same concurrency.
  const agent = new https.Agent({ keepAlive: true, maxSockets: 64, ca: pki.ca });
  const post = () =>
    new Promise<void>((resolve, reject) => {
      const req = https.request(
        url,
        { method: 'POST', agent, headers: { 'content-type': 'application/json', 'webhook-id': 'baseline' } },
        (res) => {
          res.resume();
          res.on('end', () => resolve());
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const baselineCount = BASELINE_REQUESTS;
  let next = 0;
  const latencies: number[] = [];
  const baselineStart = now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < baselineCount) {
        const t0 = now();
        await post();
        latencies.push(now() - t0);
      }
    }),
  );
  const baselineSeconds = (now() - baselineStart) / 1000;
  latencies.sort((a, b) => a - b);
  agent.destroy();

  // 2. The service: a database, a workspace on the Growth plan, one endpoint at the receiver.
  const db = await benchDatabase(40);
  const config = {
    ...loadConfig({
      DATABASE_URL: db.url,
      SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'silent',
    }),
    webhookAllowLoopback: true,
  };
  const base = await createServices(config, {
    pool: db.pool,
    url: db.url,
    kind: 'external',
    close: async () => undefined,
  });
  // Only the webhook read model: the bench's made-up lead payloads are not for the lead projection.
  const services = {
    ...base,
    store: new PostgresEventStore(db.pool, [webhookEndpointsProjection], { namedStatements: true }),
  };
  configureWebhookRuntime(services, { ca: pki.ca });
  const { workspace } = await applyDefinition(db.pool, demoDefinition(), services.secretBox);
  const context = (): CommandContext => ({
    tenantId: workspace.id,
    sandbox: false,
    metadata: { actor: { type: 'system', name: 'bench' }, correlation_id: randomUUID() },
    now: new Date(),
  });
  await createEndpoint(services, context(), workspace, { url, events: ['lead.created'] });
  const append = async () => {
    const stream = `bench-lead-${randomUUID()}`;
    const [event] = await runCommand(services.store, context(), [stream], (tx) =>
      tx.append(stream, 'no_stream', [{ type: 'lead.created', data: { payload: payload() } }]),
    );
    return event!;
  };

  // Each delivery is written twice (fanned out, then its outcome), so 20,000 deliveries leave some 20,000 dead index
  // entries that the claim's scans may step over until VACUUM removes them. A default server's autovacuum does that
  // within a minute or so; this machine's server runs with autovacuum off, so between steps the
  // bench vacuums the delivery tables itself, as autovacuum would, and says so. With autovacuum on it does nothing.
  const autovacuum = (await db.pool.query<{ autovacuum: string }>('SHOW autovacuum')).rows[0]!.autovacuum;
  const vacuumLikeAutovacuum = async () => {
    if (autovacuum === 'on') return;
    await db.pool.query(
      'VACUUM (ANALYZE) webhook_deliveries, webhook_delivery_attempts, webhook_endpoint_health, webhook_queues, webhook_leases',
    );
  };

  const statements = await statementProfile(db.pool);

  // 3. Throughput at each backlog: events appended while no worker runs, then the workers fan out and deliver them
  // all. The claim reads the due endpoints' queue rows, then each endpoint's next deliveries, so its cost should not
  // depend on how many wait; PostgreSQL's CPU per delivery at each backlog shows whether it does.
  const log = pino({ level: 'warn' });
  const throughputs: Throughput[] = [];
  for (const backlog of BACKLOGS) {
    next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next++ < backlog) await append();
      }),
    );
    await vacuumLikeAutovacuum();
    acked.clear();
    const claimsBefore = await claimCounts(services);
    const phasesBefore = await slotPhases(services);
    const writesBefore = await deliveryWrites(db.pool);
    const walAtStart = await walPosition(db.pool);
    const throughputStart = now();
    // The CPU the service's process and the PostgreSQL server spent per delivery (the receiver, a child process, apart).
    const backends = backendCpu(db.pool);
    await statements.reset();
    const { workers: throughputWorkers, cpu } = await withCpuCost(
      async () => {
        const started = await startWorkers(services, log, { concurrency: CONCURRENCY, ...perEndpoint });
        while (acked.size < backlog) await new Promise((r) => setTimeout(r, 5));
        return { workers: started };
      },
      () => backlog,
    );
    const ownBackendsMs = await backends.stop();
    const seconds = (now() - throughputStart) / 1000;
    await throughputWorkers.stop();
    const walPerDelivery = (await walSince(db.pool, walAtStart)) / backlog;
    const claimsAfter = await claimCounts(services);
    const slot = slotPhasesSince(phasesBefore, await slotPhases(services));
    // How fast the fan-out alone turned the backlog into deliveries, and how fast the claims took them.
    const phases = (
      await db.pool.query<{ fanout: number; claim: number }>(
        `SELECT extract(epoch FROM max(d.created_at) - min(d.created_at))::float8 AS fanout,
                extract(epoch FROM max(a.attempted_at) - min(a.attempted_at))::float8 AS claim
           FROM webhook_deliveries d JOIN webhook_delivery_attempts a ON a.delivery_id = d.id AND a.attempt = 1
          WHERE d.created_at >= $1`,
        [new Date(throughputStart)],
      )
    ).rows[0]!;
    throughputs.push({
      backlog,
      seconds,
      cpu,
      ownBackendsMs: ownBackendsMs / backlog,
      walPerDelivery,
      phases,
      claims: { claimed: claimsAfter.claimed - claimsBefore.claimed, empty: claimsAfter.empty - claimsBefore.empty },
      slot,
      writes: writesSince(writesBefore, await deliveryWrites(db.pool), backlog),
      statements: await statements.read(backlog),
    });
  }
  await vacuumLikeAutovacuum();

  // 3b. The durable twin from the largest backlog: the same delivery rows and attempts written by the simplest queue
  // (bench/delivery-twin.ts), signed and sent to the same receiver; what any delivery that writes them costs.
  const TWIN_BACKLOG = Number(process.env.BENCH_TWIN_BACKLOG ?? Math.max(...BACKLOGS));
  await createDeliveryTwinTables(db.pool);
  const twinBackends = backendCpu(db.pool);
  const twin = await withCpuCost(
    () =>
      runDeliveryTwin(db.pool, { url, ca: pki.ca, backlog: TWIN_BACKLOG, body, loops: TWIN_LOOPS, batch: TWIN_BATCH }),
    (r) => r.delivered,
  );
  const twinBackendsMs = (await twinBackends.stop()) / twin.delivered;
  acked.clear();

  // Loads at a steady rate, and the commit -> acknowledgement times of the first stream's events.
  const steady = async (
    seconds: number,
    streams: { rate: number; append: () => Promise<{ id: string }> }[],
  ): Promise<Map<string, number>> => {
    const commits = new Map<string, number>();
    const start = now();
    await Promise.all(
      streams.map(async ({ rate, append: appendOne }, index) => {
        const writes: Promise<void>[] = [];
        for (let i = 0; i < rate * seconds; i++) {
          const wait = start + (i * 1000) / rate - now();
          if (wait > 1) await new Promise((r) => setTimeout(r, wait));
          const write = appendOne();
          // Only the healthy tenant's (the first stream's) commits are measured.
          writes.push(write.then((event) => void (index === 0 && commits.set(event.id, now()))));
        }
        await Promise.all(writes);
      }),
    );
    return commits;
  };
  const acknowledged = async (commits: Map<string, number>): Promise<number[]> => {
    const deadline = now() + 30_000;
    while ([...commits.keys()].some((id) => !acked.has(id)) && now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    return [...commits].flatMap(([id, at]) => (acked.has(id) ? [acked.get(id)! - at] : [])).sort((a, b) => a - b);
  };
  /**
   * Workers in a service run all along; each step starts them afresh (the throughput step needs them stopped while
   * its backlog is written). The first second after a start pays for what a running service has already done: the
   * workers' database connections and the first TLS handshakes with the receiver, 64 at once. Each timed load is
   * therefore preceded by WARMUP_SECONDS of the same load, timed apart and printed, not counted.
   */
  const warmUp = async (streams: { rate: number; append: () => Promise<{ id: string }> }[]) => {
    const times = await acknowledged(await steady(WARMUP_SECONDS, streams));
    return `warm-up ${WARMUP_SECONDS} s after the workers started (not counted): p99 ${percentile(times, 99).toFixed(1)} ms, max ${(times.at(-1) ?? 0).toFixed(1)} ms`;
  };

  // 4. Steady load: RATE commands per second for STEADY_SECONDS; commit time is when the command's promise resolves.
  acked.clear();
  let workers = await startWorkers(services, log, { concurrency: CONCURRENCY, ...perEndpoint });
  const steadyWarmUp = await warmUp([{ rate: RATE, append }]);
  acked.clear();
  const total = RATE * STEADY_SECONDS;
  const steadyStart = now();
  const committed = await steady(STEADY_SECONDS, [{ rate: RATE, append }]);
  const achievedRate = total / ((now() - steadyStart) / 1000);
  const endToEnd = await acknowledged(committed);
  await workers.stop();
  // Where the time goes: commit -> delivery recorded by the fan-out -> first attempt started -> acknowledged.
  const stages = await db.pool.query<{ event_id: string; created_at: Date; attempted_at: Date }>(
    'SELECT d.event_id, d.created_at, a.attempted_at FROM webhook_deliveries d JOIN webhook_delivery_attempts a ON a.delivery_id = d.id AND a.attempt = 1 WHERE d.event_id = ANY($1)',
    [[...committed.keys()]],
  );
  const fanOut: number[] = [];
  const claim: number[] = [];
  const send: number[] = [];
  for (const r of stages.rows) {
    fanOut.push(r.created_at.getTime() - committed.get(r.event_id)!);
    claim.push(r.attempted_at.getTime() - r.created_at.getTime());
    send.push((acked.get(r.event_id) ?? NaN) - r.attempted_at.getTime());
  }
  const p = (xs: number[]) => {
    xs.sort((a, b) => a - b);
    return `p50 ${percentile(xs, 50).toFixed(0)} ms, p99 ${percentile(xs, 99).toFixed(0)} ms`;
  };

  // 5. Noisy neighbour: the healthy tenant at NOISY_RATE events/s alone, then beside tenant A (an endpoint that hangs
  // until the 10 s timeout, with a backlog) and tenant B (an endpoint answering after 9 s, with a stream of events).
  const tenantAppender = (tenantId: string) => async () => {
    const stream = `bench-lead-${randomUUID()}`;
    const [event] = await runCommand(services.store, { ...context(), tenantId }, [stream], (tx) =>
      tx.append(stream, 'no_stream', [{ type: 'lead.created', data: { payload: payload() } }]),
    );
    return event!;
  };
  const healthy = { rate: NOISY_RATE, append: append };
  await vacuumLikeAutovacuum();

  acked.clear();
  workers = await startWorkers(services, log, { concurrency: CONCURRENCY, ...perEndpoint });
  const aloneWarmUp = await warmUp([healthy]);
  acked.clear();
  const alone = await acknowledged(await steady(NOISY_SECONDS, [healthy]));
  await workers.stop();

  const noisyTenant = async (path: 'hang' | 'slow') => {
    const { workspace: ws } = await applyDefinition(db.pool, demoDefinition(), services.secretBox);
    await createEndpoint(services, { ...context(), tenantId: ws.id }, ws, {
      url: `https://127.0.0.1:${ports[path]}/${path}`,
      events: ['lead.created'],
    });
    return tenantAppender(ws.id);
  };
  const hanging = await noisyTenant('hang');
  const slow = await noisyTenant('slow');
  next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next++ < NOISY_BACKLOG) await hanging();
    }),
  );
  acked.clear();
  workers = await startWorkers(services, log, { concurrency: CONCURRENCY, ...perEndpoint });
  // The hanging endpoint's backlog is there as deliveries (fanned out) before the healthy tenant's load begins.
  while (
    Number(
      (
        await db.pool.query<{ n: string }>(
          "SELECT count(*) AS n FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE e.url LIKE '%/hang'",
        )
      ).rows[0]!.n,
    ) < NOISY_BACKLOG
  )
    await new Promise((r) => setTimeout(r, 50));
  const noisyStreams = [healthy, { rate: NOISY_SLOW_RATE, append: slow }, { rate: 5, append: hanging }];
  const besideWarmUp = await warmUp(noisyStreams);
  acked.clear();
  const beside = await acknowledged(await steady(NOISY_SECONDS, noisyStreams));
  const held = await db.pool.query<{ path: string; in_flight: string; failed: string; succeeded: string }>(
    `SELECT substring(e.url from '[^/]*$') AS path,
            count(*) FILTER (WHERE d.status = 'pending' AND EXISTS (
              SELECT 1 FROM webhook_leases l
               WHERE l.delivery_id = d.id AND l.lease_until > extract(epoch FROM now()) * 1000)) AS in_flight,
            count(*) FILTER (WHERE d.attempts > 0 AND d.status <> 'succeeded') AS failed,
            count(*) FILTER (WHERE d.status = 'succeeded') AS succeeded
       FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
      WHERE e.url LIKE '%/hang' OR e.url LIKE '%/slow' GROUP BY 1 ORDER BY 1`,
  );
  await workers.stop();

  console.log(`Webhook delivery benchmark on ${db.where}; receiver: HTTPS on 127.0.0.1 in a child process\n`);
  if (autovacuum !== 'on')
    console.log('(this server runs with autovacuum off: the bench vacuums the delivery tables between steps)\n');
  console.log(
    `plain HTTPS POST loop, ${CONCURRENCY} concurrent, keep-alive   ${(baselineCount / baselineSeconds).toFixed(0).padStart(6)} req/s   p50 ${percentile(latencies, 50).toFixed(1)} ms   p99 ${percentile(latencies, 99).toFixed(1)} ms   n=${baselineCount}`,
  );
  const baselineRate = baselineCount / baselineSeconds;
  const twinRate = twin.delivered / twin.seconds;
  console.log(
    `durable twin (${TWIN_BACKLOG} rows inserted 500 a statement; ${TWIN_LOOPS} loops, each locking ${TWIN_BATCH} due rows, sending them signed, updating them and appending their attempts in one transaction)   ${twinRate.toFixed(0).padStart(6)} deliveries/s   ${(twinRate / baselineRate).toFixed(2)} × the plain loop\n` +
      `  per delivery: CPU of this process ${twin.cpu.node.toFixed(3)} ms; of PostgreSQL: ${twinBackendsMs.toFixed(3)} ms in this database's backends, ${twin.cpu.postgres === null ? 'n/a (not local)' : `${twin.cpu.postgres.toFixed(3)} ms`} in all the server's processes`,
  );
  for (const r of throughputs) {
    const rate = r.backlog / r.seconds;
    console.log(
      `webhook deliveries (fan-out + signed delivery + log) from a ${String(r.backlog).padStart(6)} backlog   ${rate.toFixed(0).padStart(6)} deliveries/s   ${(rate / baselineRate).toFixed(2)} × the plain loop (goal ≥ 0.5), ${(rate / twinRate).toFixed(2)} × the durable twin\n` +
        `  of which: fanned out at ${(r.backlog / r.phases.fanout).toFixed(0)} /s, first attempts started at ${(r.backlog / r.phases.claim).toFixed(0)} /s; ${r.claims.claimed} claims leased deliveries, ${r.claims.empty} found none\n` +
        `  per delivery: CPU of this process ${r.cpu.node.toFixed(3)} ms; of PostgreSQL: ${r.ownBackendsMs.toFixed(3)} ms in this database's backends, ${r.cpu.postgres === null ? 'n/a (not local)' : `${r.cpu.postgres.toFixed(3)} ms`} in all the server's processes; WAL ${r.walPerDelivery.toFixed(0)} B (the server's, all databases)\n` +
        `  webhook_deliveries rows written per delivery: ${r.writes.perDelivery.toFixed(2)} (${r.writes.inserted} inserted, ${r.writes.updated} updated, ${r.writes.hotShare} of the updates HOT)\n` +
        `  a slot's time (the worker's histograms): its claim ${r.slot.claim.ms.toFixed(1)} ms (mean of ${r.slot.claim.count} claims), the attempt ${r.slot.attempt.ms.toFixed(1)} ms, from the attempt's end to its outcome written ${r.slot.recording.ms.toFixed(1)} ms; ${fastCap} slots ÷ ${(r.slot.claim.ms + r.slot.attempt.ms + r.slot.recording.ms).toFixed(1)} ms = ${((fastCap * 1000) / Math.max(0.001, r.slot.claim.ms + r.slot.attempt.ms + r.slot.recording.ms)).toFixed(0)} /s at most`,
    );
    for (const s of r.statements) console.log(`    ${s}`);
  }
  console.log(
    `commit -> receiver ack at ${achievedRate.toFixed(0)} events/s for ${STEADY_SECONDS} s   p50 ${percentile(endToEnd, 50).toFixed(1)} ms   p99 ${percentile(endToEnd, 99).toFixed(1)} ms   max ${(endToEnd.at(-1) ?? 0).toFixed(1)} ms   acked ${endToEnd.length}/${total}`,
  );
  console.log(
    `  of which: commit -> fanned out ${p(fanOut)}; -> first attempt started ${p(claim)}; -> acknowledged ${p(send)}`,
  );
  console.log(`  ${steadyWarmUp}`);
  const line = (label: string, xs: number[], of: number) =>
    `  ${label.padEnd(58)} p50 ${percentile(xs, 50).toFixed(1).padStart(7)} ms   p99 ${percentile(xs, 99).toFixed(1).padStart(7)} ms   max ${(xs.at(-1) ?? 0).toFixed(1).padStart(7)} ms   acked ${xs.length}/${of}`;
  console.log(
    `\nnoisy neighbour: healthy tenant at ${NOISY_RATE} events/s for ${NOISY_SECONDS} s, commit -> receiver ack (goal: p99 < 250 ms beside the noisy tenants)`,
  );
  console.log(line('alone', alone, NOISY_RATE * NOISY_SECONDS));
  console.log(`    ${aloneWarmUp}`);
  console.log(
    line(
      `beside a hanging endpoint (${NOISY_BACKLOG} backlog) and a 9 s one (${NOISY_SLOW_RATE}/s)`,
      beside,
      NOISY_RATE * NOISY_SECONDS,
    ),
  );
  console.log(`    ${besideWarmUp}`);
  for (const r of held.rows)
    console.log(
      `  noisy endpoint /${r.path}: ${r.in_flight} in flight at the end, ${r.succeeded} succeeded, ${r.failed} failed at least once`,
    );
  await printHotShare('the whole run', db.pool, [
    ...WRITTEN_TABLES,
    'webhook_queues',
    'webhook_leases',
    'webhook_delivery_attempts',
  ]);
  receiver.disconnect();
  await db.close();
  pki.cleanup();
}

interface Throughput {
  backlog: number;
  seconds: number;
  cpu: CpuCost;
  /** CPU ms per delivery of the PostgreSQL backends serving this bench's database (not the server's other work). */
  ownBackendsMs: number;
  walPerDelivery: number;
  phases: { fanout: number; claim: number };
  claims: { claimed: number; empty: number };
  /** Where an in-flight slot's time went: the claim that leased it, the attempt, the wait until its outcome was written. */
  slot: ReturnType<typeof slotPhasesSince>;
  writes: ReturnType<typeof writesSince>;
  statements: string[];
}

/**
 * Where PostgreSQL's time per delivery goes, statement by statement (pg_stat_statements, when the server preloads it;
 * otherwise nothing is printed): the execution time per delivery, calls per delivery and rows per call of the
 * statements that took most, the bench's own and the appends' left out.
 */
async function statementProfile(
  pool: pg.Pool,
): Promise<{ reset(): Promise<void>; read(n: number): Promise<string[]> }> {
  const loaded = await pool
    .query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
    .then(() => pool.query('SELECT 1 FROM pg_stat_statements LIMIT 1'))
    .then(
      () => true,
      () => false,
    );
  if (!loaded) return { reset: async () => undefined, read: async () => [] };
  return {
    reset: async () => void (await pool.query('SELECT pg_stat_statements_reset()')),
    read: async (n) => {
      const rows = await pool.query<{ ms: number; calls: number; rows: number; query: string }>(
        `SELECT total_exec_time::float8 AS ms, calls::float8 AS calls, rows::float8 AS rows,
                regexp_replace(query, '\\s+', ' ', 'g') AS query
           FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND query NOT ILIKE '%pg_stat%' AND query NOT ILIKE 'INSERT INTO events%'
          ORDER BY total_exec_time DESC LIMIT 12`,
      );
      const total = rows.rows.reduce((sum, r) => sum + r.ms, 0);
      return [
        `statements (pg_stat_statements): ${(total / n).toFixed(3)} ms of execution per delivery in the 12 that took most`,
        ...rows.rows.map(
          (r) =>
            `${(r.ms / n).toFixed(3)} ms/delivery  ${(r.calls / n).toFixed(3)} calls/delivery  ${(r.rows / Math.max(1, r.calls)).toFixed(1)} rows/call  ${r.query.slice(0, 110)}`,
        ),
      ];
    },
  };
}

/**
 * The CPU of the PostgreSQL backends connected to this bench's database (from /proc, by pid), sampled every 200 ms
 * until stopped, so a backend that ends meanwhile keeps what it used up to its last sample. On a machine shared with
 * other work it is the delivery's own cost, where the server's whole CPU also counts its other databases.
 */
function backendCpu(pool: pg.Pool): { stop(): Promise<number> } {
  const first = new Map<string, number>();
  const latest = new Map<string, number>();
  const read = async () => {
    const pids = await pool.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    // Only these backends' own /proc entries: reading every process's (postgresCpuMs) five times a second cost this
    // process more CPU per delivery, on a machine running many, than some of the work it measures.
    for (const { pid } of pids.rows)
      for (const [key, ms] of postgresCpuMs([pid]) ?? []) {
        if (!first.has(key)) first.set(key, ms);
        latest.set(key, ms);
      }
  };
  let running = true;
  const loop = (async () => {
    while (running) {
      await read();
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      await read();
      let ms = 0;
      for (const [key, at] of latest) ms += at - (first.get(key) ?? at);
      return ms;
    },
  };
}

/** What PostgreSQL counted of the rows written to webhook_deliveries (inserts, updates, HOT updates) so far. */
async function deliveryWrites(pool: pg.Pool): Promise<{ ins: number; upd: number; hot: number }> {
  // Each backend reports its counts at most once a second, after its transaction: wait for the workers' to arrive.
  await new Promise((r) => setTimeout(r, 1_500));
  await pool.query('SELECT pg_stat_clear_snapshot()');
  const row = await pool.query<{ ins: string; upd: string; hot: string }>(
    `SELECT n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relname = 'webhook_deliveries'`,
  );
  const r = row.rows[0]!;
  return { ins: Number(r.ins), upd: Number(r.upd), hot: Number(r.hot) };
}

function writesSince(before: { ins: number; upd: number; hot: number }, after: typeof before, deliveries: number) {
  const inserted = after.ins - before.ins;
  const updated = after.upd - before.upd;
  const hot = after.hot - before.hot;
  return {
    inserted,
    updated,
    perDelivery: (inserted + updated) / deliveries,
    hotShare: updated === 0 ? 'none' : `${((hot / updated) * 100).toFixed(0)}%`,
  };
}

function payload(): Record<string, unknown> {
  return {
    id: randomUUID(),
    full_name: 'Bench Lead',
    email: 'bench@example.com',
    phone: '+919812345678',
    stage: { key: 'new', name: 'New' },
    source: { key: 'api', name: 'API' },
  };
}

/** The server's current WAL position. */
async function walPosition(pool: pg.Pool): Promise<string> {
  return (await pool.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn;
}

/** Bytes of WAL the server wrote since `start` (every database's). */
async function walSince(pool: pg.Pool, start: string): Promise<number> {
  return (
    await pool.query<{ bytes: number }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::float8 AS bytes', [start])
  ).rows[0]!.bytes;
}
