/**
 * Lead capture and sync benchmark (npm run bench:leads).
 *
 * Seeds a workspace with BENCH_LEADS (default 200,000) leads through the bulk path, then measures, in one run and
 * against the same PostgreSQL:
 *   - POST /v1/leads (new people, so every request creates a lead) at 1, 16 and 64 concurrent clients;
 *   - the same service with personal data stored in the clear (no per-lead data key, nothing sealed): what
 *     crypto-shredding costs lead creation, measured in the same run (goal: encryption on keeps ≥ 0.90 of it), in
 *     the rounds below and again in short alternating slices (interleavedEncryption), which the goal is read from;
 *     with BENCH_PROFILE_DIR set, each slice's main-thread CPU profile is kept and the two modes compared
 *     (slice-profiles.ts);
 *   - beside it the CRUD twin (crud-twin.ts: the same POST written as a plain fastify and pg service, one lead row
 *     and one outbox row per transaction), the service's like-for-like baseline; raw fastify answering POST
 *     /v1/leads with a constant body, raw fastify doing one single-row INSERT transaction per request, the capture
 *     alone (normalisation and the capture command, no HTTP) and single-row INSERT transactions straight through pg
 *     (no HTTP);
 *   - GET /v1/leads?limit=100 from random updated_since points, beside raw fastify sending a constant 100-lead page.
 * Load comes from a worker thread over keep-alive HTTP on 127.0.0.1. Every route is first warmed up with
 * BENCH_WARMUP_SECONDS (default 3) of unmeasured load from 16 clients, so the first measured step does not pay for
 * V8 compiling the hot path (the service's path is much longer than the baselines', so it would pay the most). Each
 * step runs BENCH_SECONDS (default 5) after a one-second warm-up. The seven creation steps of a client count run
 * BENCH_ROUNDS times (default 3), in an order that rotates each round, and the round with the median rate is
 * reported: this machine's throughput drifts by a third or more within minutes, and a checkpoint during the run
 * (with its burst of full-page images) hits one round of one step. Every step prints CPU per request (this process,
 * and the local PostgreSQL processes) and the writing creation steps WAL bytes per request over all their rounds: read
 * with pg_walinspect (support.ts, walBetween; needs a superuser), this database's records only and without full-page
 * images, which fall on whichever step first changes a page after a checkpoint; without the extension, the distance
 * between WAL positions, images included. Uses DATABASE_URL's server when set (a fresh database is created and
 * dropped), else an embedded PostgreSQL in a temporary folder. BENCH_CLIENTS (default 1,16,64) picks the client counts.
 * The run ends with the service against its twin, per client count: creation rate, Node CPU and WAL per lead, beside
 * the goals (docs/benchmarks.md); then WAL per lead over the whole run, service against twin, by relation. Stops by itself.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import Fastify from 'fastify';
import pg from 'pg';
import { PostgresEventStore } from '../src/events/postgres-event-store.js';
import { projections } from '../src/projections/index.js';
import { buildApp } from '../src/http/app.js';
import type { AppServices } from '../src/bootstrap.js';
import { findKeyByValue, type KeyLookup } from '../src/keys/repository.js';
import type { Workspace } from '../src/workspaces/workspace.js';
import {
  addWal,
  benchDatabase,
  benchLeadBody,
  benchServices,
  captureAsKey,
  plainPool,
  printHotShare,
  seededSubmission,
  seedLeads,
  unlimitedWorkspace,
  walBetween,
  walBytes,
  walInspection,
  walKeep,
  walPosition,
  walTotal,
  withCpuCost,
  WRITTEN_TABLES,
  type CpuCost,
  type WalTally,
} from './support.js';
import { SliceProfiler } from './slice-profiles.js';
import { copySeededLeads, createTwinTables, startCrudTwin } from './crud-twin.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const LEADS = Number(process.env.BENCH_LEADS ?? 200_000);
const CONCURRENCY = (process.env.BENCH_CLIENTS ?? '1,16,64').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SLICES = Number(process.env.BENCH_SLICES ?? 24);
const SLICE_SECONDS = Number(process.env.BENCH_SLICE_SECONDS ?? 2);
/** Where the interleaved slices' main-thread CPU profiles go, by mode (slice-profiles.ts); unset: not profiled. */
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;
/**
 * People numbered apart per slice: more than a slice submits (a few thousand a second at most, its warm-up second
 * included); a slice that needs more stops the run.
 */
const SLICE_PEOPLE = 100_000;
if (SLICES * SLICE_PEOPLE >= 10_000_000) throw new Error('BENCH_SLICES: at most 99 (people are numbered in 7 digits)');
const POOL_SIZE = 20;

type Measured = Result & { cpu: CpuCost };

interface Result {
  requests: number;
  /** Every request completed, warm-up included (what the CPU figures are divided by). */
  completed: number;
  errors: number;
  seconds: number;
  p50: number;
  p99: number;
}

// The load generator: closed-loop clients over keep-alive sockets, in plain JavaScript so the worker needs no loader.
const LOAD_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { port, method, paths, headers, bodyKind, concurrency, warmupMs, durationMs, phase, seqStart } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
let seq = seqStart;
function leadBody() {
  seq += 1;
  const n = String(seq).padStart(7, '0');
  return JSON.stringify({ full_name: 'Bench Person ' + n, phone: '7' + phase + n, email: 'bench-' + phase + '-' + n + '@example.com',
    city: seq % 2 ? 'Bengaluru' : 'Delhi', visa_type: 'student', country_interest: 'CA', intake: '2027-01',
    utm: { source: 'bench', campaign: 'load' }, message: 'Benchmark enquiry', consent: true });
}
function once() {
  return new Promise((resolve) => {
    const body = bodyKind === 'lead' ? leadBody() : undefined;
    const target = paths[Math.floor(Math.random() * paths.length)];
    const req = http.request({ host: '127.0.0.1', port, method, path: target, agent,
      headers: body ? { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : headers }, (res) => {
      res.on('data', () => {});
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', () => resolve(0));
    if (body) req.write(body);
    req.end();
  });
}
(async () => {
  const start = performance.now();
  const warmEnd = start + warmupMs;
  const end = warmEnd + durationMs;
  const latencies = [];
  let errors = 0;
  let completed = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      const status = await once();
      const t1 = performance.now();
      completed += 1;
      if (t0 >= warmEnd && t1 <= end) {
        latencies.push(t1 - t0);
        if (status < 200 || status >= 300) errors += 1;
      }
    }
  }));
  agent.destroy();
  parentPort.postMessage({ latencies, errors, completed, seconds: durationMs / 1000 });
})();
`;

function summarise(latencies: number[], errors: number, seconds: number, completed: number): Result {
  const sorted = Float64Array.from(latencies).sort();
  const at = (q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : NaN);
  return { requests: latencies.length, completed, errors, seconds, p50: at(0.5), p99: at(0.99) };
}

// Every load to a server that keeps people gets its own two-digit phase, so the people it submits never repeat an
// earlier load's (a repeat would be a duplicate, a cheaper path, or the twin's 409). The others share phase 0: the
// phases would not last a five-round run otherwise.
let phaseCounter = 0;
function nextPhase(): number {
  phaseCounter += 1;
  if (phaseCounter > 99) throw new Error('more loads than two-digit phases');
  return phaseCounter;
}

/**
 * What a load sends: to which server, with which method and headers, to paths picked at random, leads or no body,
 * and whether the server keeps the people it is sent (then each load needs people of its own).
 */
interface Target {
  port: number;
  method: 'GET' | 'POST';
  paths: string[];
  headers: Record<string, string>;
  bodyKind: 'lead' | 'none';
  keepsPeople: boolean;
}

/** A new person each time, posted to `route` (/v1/leads unless named) of a server that keeps them or not. */
const posting = (port: number, headers: Record<string, string>, route = '/v1/leads', keepsPeople = true): Target => ({
  port,
  method: 'POST',
  paths: [route],
  headers,
  bodyKind: 'lead',
  keepsPeople,
});

function load(target: Target, concurrency: number): Promise<Measured> {
  return withCpuCost(
    () => loadOnce(target, concurrency, SECONDS * 1000),
    (r) => r.completed,
  );
}

/** Unmeasured load before the first measured step of a route, so V8 has compiled its hot paths (the same for every server). */
async function warmUp(target: Target): Promise<void> {
  await loadOnce(target, 16, WARMUP_SECONDS * 1000);
}

function loadOnce(
  target: Target,
  concurrency: number,
  durationMs: number,
  /** The people to submit: a phase of their own, or a later stretch of one an earlier load used. */
  people: { phase: number; seqStart: number } = { phase: target.keepsPeople ? nextPhase() : 0, seqStart: 0 },
): Promise<Result> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(LOAD_WORKER, {
      eval: true,
      workerData: {
        ...target,
        concurrency,
        warmupMs: 1000,
        durationMs,
        phase: String(people.phase).padStart(2, '0'),
        seqStart: people.seqStart,
      },
    });
    worker.once('message', (m: { latencies: number[]; errors: number; completed: number; seconds: number }) =>
      resolve(summarise(m.latencies, m.errors, m.seconds, m.completed)),
    );
    worker.once('error', reject);
  });
}

/** Single-row INSERT transactions straight through pg, closed loop, no HTTP. */
function rawInserts(pool: pg.Pool, concurrency: number): Promise<Measured> {
  return withCpuCost(
    () => rawInsertsOnce(pool, concurrency),
    (r) => r.completed,
  );
}

/** The baselines' unit of work: one single-row INSERT in its own transaction (BEGIN, INSERT, COMMIT). */
async function insertTransaction(pool: pg.Pool, body: unknown): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('INSERT INTO bench_raw_inserts (id, body) VALUES ($1, $2)', [
      randomUUID(),
      JSON.stringify(body),
    ]);
    await client.query('COMMIT');
  } finally {
    client.release();
  }
}

function rawInsertsOnce(pool: pg.Pool, concurrency: number): Promise<Result> {
  return closedLoop(concurrency, async () => {
    await insertTransaction(pool, { full_name: 'Raw', consent: true });
    return 201;
  });
}

/**
 * The capture without HTTP: the same people as the HTTP load, normalised as the route does (phone and email), then
 * the capture command (decision, event, read model, checks, one durable commit) in a closed loop straight through pg.
 */
function commandCaptures(
  services: AppServices,
  workspace: Workspace,
  key: KeyLookup,
  concurrency: number,
): Promise<Measured> {
  const phase = String(nextPhase()).padStart(2, '0');
  let seq = 0;
  const capture = async () => {
    seq += 1;
    const body = benchLeadBody(seq, phase);
    return captureAsKey(services, workspace, key, body, `bench_${seq}`);
  };
  return withCpuCost(
    () => closedLoop(concurrency, capture),
    (r) => r.completed,
  );
}

/** Runs `op` from `concurrency` clients for a one-second warm-up and BENCH_SECONDS; an answer other than 2xx, or a throw, counts as an error. */
async function closedLoop(concurrency: number, op: () => Promise<number>): Promise<Result> {
  const latencies: number[] = [];
  const warmEnd = performance.now() + 1000;
  const end = warmEnd + SECONDS * 1000;
  let errors = 0;
  let completed = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const status = await op().catch(() => 0);
        completed += 1;
        const t1 = performance.now();
        if (t0 >= warmEnd && t1 <= end) {
          latencies.push(t1 - t0);
          if (status < 200 || status >= 300) errors += 1;
        }
      }
    }),
  );
  return summarise(latencies, errors, SECONDS, completed);
}

const rate = (x: Result) => x.requests / x.seconds;

interface Interleaved {
  /** Requests per second over all the slices of each mode. */
  sealed: number;
  plain: number;
  /** sealed / plain over all slices: the goal's figure. */
  ratio: number;
  /** Each neighbouring pair's ratio (sealed slice over the plain slice beside it), for the spread. */
  pairs: number[];
  /** The pairs' mean and two standard errors around it (pairSpread). */
  spread: { mean: number; halfWidth: number };
  slices: number;
}

/**
 * The pairs' mean and the half-width of an interval of two standard errors around it (about 95%): how far a run's
 * figure may sit from the ratio a longer run would find, so a miss within it is not read as a measured miss.
 */
function pairSpread(pairs: readonly number[]): { mean: number; halfWidth: number } {
  const n = pairs.length;
  const mean = pairs.reduce((sum, x) => sum + x, 0) / n;
  if (n < 2) return { mean, halfWidth: Number.NaN };
  const variance = pairs.reduce((sum, x) => sum + (x - mean) ** 2, 0) / (n - 1);
  return { mean, halfWidth: 2 * Math.sqrt(variance / n) };
}

const spreadText = ({ spread }: Interleaved) =>
  `pairs' mean ${spread.mean.toFixed(3)} ± ${spread.halfWidth.toFixed(3)}`;

/**
 * Sealed against not sealed, measured in short alternating slices (ABBA: sealed, plain, plain, sealed, …), so both see
 * the same minutes of this machine, whose throughput drifts by a third within minutes: the rounds' medians, taken
 * minutes apart, move with the drift as much as with the sealing. BENCH_SLICES slices (default 24) of
 * BENCH_SLICE_SECONDS (default 2) each, after the load worker's own one-second warm-up.
 */
async function interleavedEncryption(
  run: (mode: 'sealed' | 'plain', slice: number) => Promise<Result>,
): Promise<Interleaved> {
  const totals = { sealed: { requests: 0, seconds: 0 }, plain: { requests: 0, seconds: 0 } };
  const pairs: number[] = [];
  let previous: { mode: 'sealed' | 'plain'; rate: number } | undefined;
  for (let slice = 0; slice < SLICES; slice++) {
    const mode = slice % 4 === 0 || slice % 4 === 3 ? 'sealed' : 'plain';
    const result = await run(mode, slice);
    totals[mode].requests += result.requests;
    totals[mode].seconds += result.seconds;
    if (slice % 2 === 1 && previous) {
      const sealedRate = mode === 'sealed' ? rate(result) : previous.rate;
      const plainRate = mode === 'plain' ? rate(result) : previous.rate;
      pairs.push(sealedRate / plainRate);
    }
    previous = { mode, rate: rate(result) };
  }
  const sealed = totals.sealed.requests / totals.sealed.seconds;
  const plain = totals.plain.requests / totals.plain.seconds;
  return { sealed, plain, ratio: sealed / plain, pairs, spread: pairSpread(pairs), slices: SLICES };
}
const cpuText = ({ cpu }: Measured) =>
  `   CPU/req node ${cpu.node.toFixed(3)} ms${cpu.postgres === null ? '' : `, postgres ${cpu.postgres.toFixed(3)} ms`}`;
const fmt = (r: Measured) =>
  `${rate(r).toFixed(0).padStart(7)} req/s   p50 ${r.p50.toFixed(2).padStart(7)} ms   p99 ${r.p99.toFixed(2).padStart(7)} ms${cpuText(r)}${r.errors ? `   (${r.errors} non-2xx)` : ''}`;

type CreationStep = 'app' | 'plain' | 'twin' | 'constant' | 'httpInsert' | 'command' | 'pgInsert';
const CREATION_STEPS: CreationStep[] = ['app', 'plain', 'twin', 'constant', 'httpInsert', 'command', 'pgInsert'];
type Step = Measured;

/**
 * The WAL a creation step wrote over all its rounds at one client count (the rounds of a step see different
 * checkpoints and GIN pending-list flushes; together they average them): by relation, full-page images set apart
 * (walBetween), when pg_walinspect can be had; the distance between the WAL positions, images included, always.
 */
interface WalReading {
  requests: number;
  tally: WalTally | null;
  rawBytes: number;
}

/** WAL bytes per request: without full-page images (walBytes) when the reading has them by relation, else raw. */
function walPerRequest(w: WalReading): { bytes: number; imageBytes: number | null } {
  const n = Math.max(1, w.requests);
  if (!w.tally) return { bytes: w.rawBytes / n, imageBytes: null };
  const total = walTotal(w.tally);
  return { bytes: total.bytes / n, imageBytes: total.imageBytes / n };
}

const walText = (w: WalReading | undefined) => {
  if (!w) return '';
  const { bytes, imageBytes } = walPerRequest(w);
  return imageBytes === null
    ? `   WAL/req ${bytes.toFixed(0)} B (full pages included)`
    : `   WAL/req ${bytes.toFixed(0)} B (+ ${imageBytes.toFixed(0)} B full pages)`;
};

/** Where a relation's bytes go in the breakdown: the service's `leads` and the twin's `twin_leads` on one line. */
function walGroup(r: { table: string; kind: string; relation: string }): string {
  const table = r.table === 'twin_leads' ? 'leads' : r.table;
  if (r.kind === 'transaction') return 'commit records';
  if (r.kind === 'heap') return `${table} (heap)`;
  if (r.kind === 'TOAST') return `${table} (TOAST)`;
  if (r.kind === 'sequence') return `${r.relation} (sequence)`;
  return `${table}: ${r.kind} indexes`;
}

/**
 * The headline of the WAL goal over the whole run (every round at every client count): WAL per lead without
 * full-page images, the service over its twin, then by relation (grouped: a table's heap, its TOAST, its indexes by
 * access method), with the unsealed service beside.
 */
function printWalHeadline(readings: Record<'app' | 'plain' | 'twin', WalReading>): void {
  const { app, plain, twin } = readings;
  if (!app.tally || !plain.tally || !twin.tally) {
    const raw = (w: WalReading) => w.rawBytes / Math.max(1, w.requests);
    console.log(
      `
WAL per lead, whole run: ${raw(app).toFixed(0)} / ${raw(twin).toFixed(0)} B, full-page images included (pg_walinspect unavailable): not comparable, the order of the steps decides it`,
    );
    return;
  }
  const perLead = (w: WalReading) => walPerRequest(w);
  const a = perLead(app);
  const t = perLead(twin);
  console.log(
    `
WAL per lead, whole run, full-page images excluded: service ${a.bytes.toFixed(0)} B / twin ${t.bytes.toFixed(0)} B = ${(a.bytes / t.bytes).toFixed(2)} ×   (goal ≤ 2 ×;` +
      ` ${app.requests.toLocaleString('en')} and ${twin.requests.toLocaleString('en')} leads; images left out: ${a.imageBytes!.toFixed(0)} and ${t.imageBytes!.toFixed(0)} B per lead)`,
  );
  const groups = new Map<string, { app: number; plain: number; twin: number; relations: Set<string> }>();
  for (const [mode, w] of [
    ['app', app],
    ['plain', plain],
    ['twin', twin],
  ] as const) {
    for (const r of w.tally!.values()) {
      const name = walGroup(r);
      const g = groups.get(name) ?? { app: 0, plain: 0, twin: 0, relations: new Set<string>() };
      g[mode] += walBytes(r) / Math.max(1, w.requests);
      g.relations.add(r.relation);
      groups.set(name, g);
    }
  }
  console.log(
    `  ${'by relation, B per lead'.padEnd(44)} ${'service'.padStart(8)} ${'unsealed'.padStart(8)} ${'twin'.padStart(8)}   relations`,
  );
  const rows = [...groups.entries()].sort((x, y) => Math.max(y[1].app, y[1].twin) - Math.max(x[1].app, x[1].twin));
  for (const [name, g] of rows) {
    if (Math.max(g.app, g.plain, g.twin) < 0.5) continue;
    const relations = [...g.relations].sort();
    console.log(
      `  ${name.padEnd(44)} ${g.app.toFixed(0).padStart(8)} ${g.plain.toFixed(0).padStart(8)} ${g.twin.toFixed(0).padStart(8)}   ${relations.length > 3 ? `${relations.length} relations` : relations.join(', ')}`,
    );
  }
  const sum = (pick: (g: { app: number; twin: number }) => number) => rows.reduce((s, [, g]) => s + pick(g), 0);
  console.log(
    `  ${'total'.padEnd(44)} ${sum((g) => g.app)
      .toFixed(0)
      .padStart(8)} ${perLead(plain).bytes.toFixed(0).padStart(8)} ${sum((g) => g.twin)
      .toFixed(0)
      .padStart(8)}`,
  );
}

/** The round with the median rate (the lower middle one of an even count), shown whole so its figures belong together. */
function median(rounds: Step[]): Step {
  const sorted = [...rounds].sort((a, b) => rate(a) - rate(b));
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/**
 * The service against its CRUD twin at each client count, with their goals (docs/benchmarks.md), and the floors (the bare route
 * and the one-row insert) beside: the rates' ratio, and Node CPU and WAL per lead, which vary far less between runs.
 */
function printTwinGoals(
  creation: Record<number, Record<CreationStep, Step>>,
  wal: Record<number, Partial<Record<CreationStep, WalReading>>>,
): void {
  const times = (service: number, twin: number) => `${(service / twin).toFixed(2)} ×`;
  console.log('\nThe service against its CRUD twin, service / twin (medians of the rounds)');
  for (const c of CONCURRENCY) {
    const { app, twin, httpInsert, pgInsert } = creation[c]!;
    console.log(
      `  ${String(c).padStart(2)} clients  creation rate    ${rate(app).toFixed(0)} / ${rate(twin).toFixed(0)} req/s = ${(rate(app) / rate(twin)).toFixed(2)}   (goal ≥ 0.7)`,
    );
    console.log(
      `              Node CPU per lead ${app.cpu.node.toFixed(3)} / ${twin.cpu.node.toFixed(3)} ms = ${times(app.cpu.node, twin.cpu.node)}   (goal ≤ 1.5 ×)`,
    );
    const appWal = wal[c]?.app;
    const twinWal = wal[c]?.twin;
    if (appWal && twinWal) {
      const a = walPerRequest(appWal);
      const t = walPerRequest(twinWal);
      console.log(
        `              WAL per lead      ${a.bytes.toFixed(0)} / ${t.bytes.toFixed(0)} B = ${times(a.bytes, t.bytes)}   (goal ≤ 2 ×; ${a.imageBytes === null ? 'full pages included' : 'full pages excluded'}, all rounds)`,
      );
    }
    if (app.cpu.postgres !== null && twin.cpu.postgres !== null)
      console.log(
        `              PostgreSQL CPU    ${app.cpu.postgres.toFixed(3)} / ${twin.cpu.postgres.toFixed(3)} ms per lead = ${times(app.cpu.postgres, twin.cpu.postgres)}   (no goal)`,
      );
    console.log(
      `              floors            raw fastify + 1-row tx ${rate(httpInsert).toFixed(0)} req/s, 1-row tx via pg ${rate(pgInsert).toFixed(0)} req/s`,
    );
  }
}

async function main(): Promise<void> {
  const db = await benchDatabase(POOL_SIZE);
  const { pool, url: dbUrl } = db;
  console.log(`Database: ${db.where}`);
  const rawPool = plainPool(dbUrl, POOL_SIZE);
  // Reads the WAL position around the creation steps.
  const admin = new pg.Client({ connectionString: dbUrl });
  await admin.connect();
  // pg_walinspect in the bench's database, to read each step's WAL without full-page images (needs a superuser).
  const walOid = await walInspection(admin);
  // A slot of the admin session keeps each step's WAL until it is read, whatever checkpoints run meanwhile.
  const keepWal = walOid === null ? null : await walKeep(admin);
  if (walOid === null)
    console.log('pg_walinspect cannot be had (needs a superuser): WAL per request includes full-page images');
  const closers: (() => Promise<unknown>)[] = [];
  try {
    await pool.query(
      'CREATE TABLE bench_raw_inserts (id uuid PRIMARY KEY, body jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())',
    );
    await createTwinTables(pool);
    const services = await benchServices(db);
    closers.push(() => services.rateLimits.close());
    const {
      workspace,
      key: { value: key },
    } = await unlimitedWorkspace(services, 'bench', 'bench');
    const auth = { authorization: `Bearer ${key}` };
    const benchKey = (await findKeyByValue(pool, key))!;
    const benchWorkspace = (await services.workspaces.get(workspace.id, benchKey.workspace_revision))!;

    // Seed through the bulk path, timestamps one second apart ending now.
    const seedStart = performance.now();
    await seedLeads(pool, workspace, LEADS, (i) => seededSubmission(i), Date.now() - LEADS * 1000, 'bench seed');
    // Vacuumed so no autovacuum of the freshly seeded tables runs during a measured step.
    await pool.query('VACUUM (ANALYZE) leads, lead_order, events');
    // The twin's table starts from the same leads, so both tables' indexes are the same size when the steps begin;
    // timed apart, so the seeding's figure stays comparable (the checkpoint below writes the copy's pages too).
    const copyStart = performance.now();
    await copySeededLeads(pool);
    await pool.query('VACUUM (ANALYZE) twin_leads');
    const copySeconds = (performance.now() - copyStart) / 1000;
    // The seeding's pages are written out now, so the checkpoint its WAL would soon set off does not fall in the first
    // measured steps. CHECKPOINT needs a superuser (or pg_checkpoint); without one the run goes on.
    const checkpointed = await admin.query('CHECKPOINT').then(
      () => true,
      () => false,
    );
    const seedSeconds = (performance.now() - seedStart) / 1000 - copySeconds;
    console.log(
      `Seeded ${LEADS.toLocaleString('en')} leads in ${seedSeconds.toFixed(1)} s (${(LEADS / seedSeconds).toFixed(0)} leads/s, bulk path)` +
        `, copied into the twin's table in ${copySeconds.toFixed(1)} s${checkpointed ? '' : '; CHECKPOINT refused (not a superuser)'}`,
    );

    const app = await buildApp(services, { logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    closers.push(() => app.close());
    const appPort = (app.server.address() as { port: number }).port;
    // The same service with encryption off: its event store seals nothing and makes no data keys.
    const plainApp = await buildApp(
      { ...services, store: new PostgresEventStore(pool, projections, { namedStatements: true }) },
      { logger: false },
    );
    await plainApp.listen({ host: '127.0.0.1', port: 0 });
    closers.push(() => plainApp.close());
    const plainPort = (plainApp.server.address() as { port: number }).port;

    // The constant bodies raw fastify sends: a real LeadCreated and a real page of 100 leads.
    const samplePage = await (await fetch(`http://127.0.0.1:${appPort}/v1/leads?limit=100`, { headers: auth })).text();
    const createdBody = JSON.stringify({
      id: randomUUID(),
      status: 'new',
      assigned_to: 'vikram@northstar.example',
      duplicate: false,
      test_mode: false,
    });
    const raw = Fastify({ logger: false, bodyLimit: 65536 });
    raw.post('/v1/leads', async (_request, reply) => reply.status(201).type('application/json').send(createdBody));
    raw.get('/v1/leads', async (_request, reply) => reply.type('application/json').send(samplePage));
    raw.post('/raw/insert', async (request, reply) => {
      await insertTransaction(rawPool, request.body);
      return reply.status(201).type('application/json').send(createdBody);
    });
    await raw.listen({ host: '127.0.0.1', port: 0 });
    closers.push(() => raw.close());
    const rawPort = (raw.server.address() as { port: number }).port;
    // The twin on the baselines' plain pool: pg as an application without this service's transport uses it.
    const twin = await startCrudTwin(rawPool, [{ value: key, workspace: benchWorkspace }]);
    closers.push(() => twin.close());

    console.log(
      `\nPOST /v1/leads (each request a new person; ${SECONDS} s per step, pool ${POOL_SIZE}, 4 HTTP servers in this process, load from a worker thread;` +
        ` ${ROUNDS} rounds in rotating order, the round with the median rate shown)`,
    );
    // The WAL each writing step wrote, read after it: by relation and without full-page images when pg_walinspect can
    // be had (the first change to a page after a checkpoint logs the whole page, so images fall on whichever step
    // runs first after one), else only the distance between the positions.
    const readWal = async (before: string, result: Measured, into: WalReading) => {
      const after = await walPosition(admin);
      into.requests += result.completed;
      into.rawBytes += Number(
        (await admin.query<{ d: string }>('SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn) AS d', [before, after]))
          .rows[0]!.d,
      );
      if (walOid !== null && into.tally) addWal(into.tally, await walBetween(admin, walOid, before, after));
    };
    const wal: Record<number, Partial<Record<CreationStep, WalReading>>> = {};
    const runWal: Record<'app' | 'plain' | 'twin', WalReading> = {
      app: { requests: 0, tally: walOid === null ? null : new Map(), rawBytes: 0 },
      plain: { requests: 0, tally: walOid === null ? null : new Map(), rawBytes: 0 },
      twin: { requests: 0, tally: walOid === null ? null : new Map(), rawBytes: 0 },
    };
    const creating = {
      app: posting(appPort, auth),
      plain: posting(plainPort, auth),
      twin: posting(twin.port, auth),
      constant: posting(rawPort, {}, '/v1/leads', false),
      httpInsert: posting(rawPort, {}, '/raw/insert', false),
    };
    for (const target of Object.values(creating)) await warmUp(target);
    const steps: Record<CreationStep, { label: string; run: (c: number) => Promise<Measured>; wal: boolean }> = {
      app: {
        label: 'visa-crm-api            ',
        run: (c) => load(creating.app, c),
        wal: true,
      },
      plain: {
        label: 'visa-crm-api, no sealing',
        run: (c) => load(creating.plain, c),
        wal: true,
      },
      twin: {
        label: 'CRUD twin, lead + outbox',
        run: (c) => load(creating.twin, c),
        wal: true,
      },
      constant: {
        label: 'raw fastify constant    ',
        run: (c) => load(creating.constant, c),
        wal: false,
      },
      httpInsert: {
        label: 'raw fastify + 1-row tx  ',
        run: (c) => load(creating.httpInsert, c),
        wal: true,
      },
      command: {
        label: 'capture alone, no HTTP ',
        run: (c) => commandCaptures(services, benchWorkspace, benchKey, c),
        wal: true,
      },
      pgInsert: { label: '1-row tx via pg, no HTTP', run: (c) => rawInserts(rawPool, c), wal: false },
    };
    const creation: Record<number, Record<CreationStep, Step>> = {};
    const encryption: Record<number, Interleaved> = {};
    const profiles: Record<number, string[]> = {};
    for (const c of CONCURRENCY) {
      const rounds: Record<CreationStep, Step[]> = {
        app: [],
        plain: [],
        twin: [],
        constant: [],
        httpInsert: [],
        command: [],
        pgInsert: [],
      };
      for (let round = 0; round < ROUNDS; round++) {
        // Rotating the order spreads whatever drifts during a round (the machine, the tables' growth) over every step.
        const first = round % CREATION_STEPS.length;
        for (const step of [...CREATION_STEPS.slice(first), ...CREATION_STEPS.slice(0, first)]) {
          const before = await walPosition(admin);
          await keepWal?.(before);
          const result = await steps[step].run(c);
          rounds[step].push(result);
          if (!steps[step].wal) continue;
          const reading = ((wal[c] ??= {})[step] ??= {
            requests: 0,
            tally: walOid === null ? null : new Map(),
            rawBytes: 0,
          });
          await readWal(before, result, reading);
        }
      }
      creation[c] = Object.fromEntries(CREATION_STEPS.map((step) => [step, median(rounds[step])])) as Record<
        CreationStep,
        Step
      >;
      // One phase of people per mode, each slice a later stretch of it (the phase numbers would not last otherwise).
      const slicePhases = { sealed: nextPhase(), plain: nextPhase() };
      const profiler = PROFILE_DIR ? new SliceProfiler(path.join(PROFILE_DIR, `${c}-clients`)) : undefined;
      encryption[c] = await interleavedEncryption(async (mode, slice) => {
        await profiler?.start();
        const result = await loadOnce(mode === 'sealed' ? creating.app : creating.plain, c, SLICE_SECONDS * 1000, {
          phase: slicePhases[mode],
          seqStart: slice * SLICE_PEOPLE,
        });
        // The profile spans the load worker's warm-up second too, so it is divided by every completed request.
        await profiler?.stop(mode, result.completed);
        // A slice that ran past its stretch of people submitted the next slice's, which would then be duplicates.
        if (result.completed > SLICE_PEOPLE)
          throw new Error(
            `A slice submitted ${result.completed} people, more than its ${SLICE_PEOPLE}: shorten BENCH_SLICE_SECONDS`,
          );
        return result;
      });
      profiles[c] = profiler?.report('sealed', 'plain') ?? [];
      profiler?.close();
      for (const step of CREATION_STEPS) {
        const r = creation[c]![step];
        const all = rounds[step].map((x) => rate(x).toFixed(0)).join(' / ');
        console.log(
          `  ${step === 'app' ? String(c).padStart(2) + ' clients' : '          '}  ${steps[step].label} ${fmt(r)}${walText(wal[c]?.[step])}   rounds ${all} req/s`,
        );
      }
      const e = encryption[c]!;
      console.log(
        `              sealed / not sealed, interleaved: ${e.sealed.toFixed(0)} / ${e.plain.toFixed(0)} req/s = ${e.ratio.toFixed(2)}` +
          `   (${e.slices} slices of ${SLICE_SECONDS} s in ABBA order; pairs ${e.pairs.map((x) => x.toFixed(2)).join(' ')};` +
          ` ${spreadText(e)}, two standard errors)`,
      );
      for (const line of profiles[c] ?? []) console.log(`              ${line}`);
    }

    const total = Number(
      (await pool.query('SELECT count(*) AS n FROM leads WHERE tenant_id = $1', [workspace.id])).rows[0].n,
    );
    const times = await pool.query<{ lo: Date; hi: Date }>(
      'SELECT min(updated_at) AS lo, max(updated_at) AS hi FROM leads WHERE tenant_id = $1',
      [workspace.id],
    );
    const lo = times.rows[0]!.lo.getTime();
    const span = times.rows[0]!.hi.getTime() - lo;
    const listPaths = Array.from(
      { length: 2000 },
      () =>
        `/v1/leads?limit=100&updated_since=${encodeURIComponent(new Date(lo + Math.floor(Math.random() * span * 0.99)).toISOString())}`,
    );
    console.log(
      `\nGET /v1/leads?limit=100 from random updated_since points over ${total.toLocaleString('en')} leads (page ${(samplePage.length / 1024).toFixed(0)} KiB)`,
    );
    const listPages: Target = {
      port: appPort,
      method: 'GET',
      paths: listPaths,
      headers: auth,
      bodyKind: 'none',
      keepsPeople: false,
    };
    const constantPage: Target = {
      port: rawPort,
      method: 'GET',
      paths: ['/v1/leads'],
      headers: {},
      bodyKind: 'none',
      keepsPeople: false,
    };
    await warmUp(listPages);
    await warmUp(constantPage);
    const listSteps = async (): Promise<Record<number, { app: Measured; constant: Measured }>> => {
      const measured: Record<number, { app: Measured; constant: Measured }> = {};
      for (const c of CONCURRENCY) {
        const appResult = await load(listPages, c);
        const constant = await load(constantPage, c);
        measured[c] = { app: appResult, constant };
        console.log(`  ${String(c).padStart(2)} clients  visa-crm-api             ${fmt(appResult)}`);
        console.log(`             raw fastify constant     ${fmt(constant)}`);
      }
      return measured;
    };
    const asLeft = await listSteps();
    // The creation steps added some 370,000 leads in a few minutes. A server with autovacuum on (the default) has
    // vacuumed and analysed the table by the time anyone lists them; this machine's server runs with it off, so the
    // bench does what autovacuum would, measures again, and reads the goal from that second listing.
    const autovacuum = (await pool.query<{ autovacuum: string }>('SHOW autovacuum')).rows[0]!.autovacuum;
    let listing = asLeft;
    if (autovacuum !== 'on') {
      console.log(
        '  (autovacuum is off on this server: VACUUM (ANALYZE) leads and lead_order, as autovacuum would, then again)',
      );
      await pool.query('VACUUM (ANALYZE) leads, lead_order');
      listing = await listSteps();
    }

    console.log('\nGoals (medians of the rounds)');
    for (const c of CONCURRENCY) {
      const r = creation[c]!;
      console.log(
        `  creation at ${String(c).padStart(2)} clients: ${(rate(r.app) / rate(r.httpInsert)).toFixed(2)} × the bare route, raw fastify + 1-row tx (goal ≥ 0.5); ${(rate(r.app) / rate(r.pgInsert)).toFixed(2)} × 1-row tx via pg`,
      );
    }
    for (const c of CONCURRENCY) {
      const r = creation[c]!;
      console.log(
        `  encryption at ${String(c).padStart(2)} clients: creation with personal data sealed runs at ${encryption[c]!.ratio.toFixed(2)} × creation without, interleaved (goal ≥ 0.90; ${spreadText(encryption[c]!)}); ${(rate(r.app) / rate(r.plain)).toFixed(2)} between the rounds' medians`,
      );
    }
    for (const c of CONCURRENCY) {
      const r = creation[c]!;
      console.log(
        `  capture alone at ${String(c).padStart(2)} clients (no HTTP, no validation): ${(rate(r.command) / rate(r.pgInsert)).toFixed(2)} × 1-row tx via pg`,
      );
    }
    // What HTTP alone costs against the goal's baseline: the same single-row insert transaction behind a bare fastify
    // route, with no validation, no event and no read model. A service whose requests do more than this route's can
    // pass it only by saving round trips or, under load, by sharing commits.
    for (const c of CONCURRENCY) {
      const r = creation[c]!;
      console.log(
        `  bare route at ${String(c).padStart(2)} clients: raw fastify + 1-row tx reaches ${(rate(r.httpInsert) / rate(r.pgInsert)).toFixed(2)} × 1-row tx via pg`,
      );
    }
    // On a CPU-bound machine throughput follows CPU per request, which varies far less between runs than throughput.
    const totalCpu = (x: Measured) => (x.cpu.postgres === null ? null : x.cpu.node + x.cpu.postgres);
    for (const c of CONCURRENCY) {
      const r = creation[c]!;
      const app = totalCpu(r.app);
      const raw = totalCpu(r.httpInsert);
      if (app === null || raw === null) continue;
      console.log(
        `  CPU per request at ${String(c).padStart(2)} clients: ${app.toFixed(3)} ms per lead vs ${raw.toFixed(3)} ms per raw fastify + 1-row tx (the raw one costs ${(raw / app).toFixed(2)} of a lead)`,
      );
    }
    for (const c of CONCURRENCY)
      console.log(
        `  listing p99 at ${String(c).padStart(2)} clients: ${listing[c]!.app.p99.toFixed(2)} ms (goal < 10 ms at one client)` +
          (listing === asLeft ? '' : `; ${asLeft[c]!.app.p99.toFixed(2)} ms before the vacuum`),
      );
    printTwinGoals(creation, wal);
    for (const c of CONCURRENCY)
      for (const mode of ['app', 'plain', 'twin'] as const) {
        const w = wal[c]?.[mode];
        if (!w) continue;
        runWal[mode].requests += w.requests;
        runWal[mode].rawBytes += w.rawBytes;
        if (w.tally && runWal[mode].tally) addWal(runWal[mode].tally, w.tally);
      }
    printWalHeadline(runWal);
    await printHotShare('\nthe whole run', db.pool, WRITTEN_TABLES);
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await rawPool.end();
    await admin.end();
    await db.close();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
