import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createServices, type AppServices } from '../src/bootstrap.js';
import { captureLead } from '../src/commands/leads/capture-lead.js';
import { loadConfig } from '../src/config.js';
import { ensureAccount, setPassword, type StaffAccount } from '../src/identity/accounts.js';
import { createKey, type KeyLookup } from '../src/keys/repository.js';
import { normaliseSubmission, type LeadCreateBody, type LeadSubmission } from '../src/domain/leads/submission.js';
import { SCOPES } from '../src/shared/enums.js';
import type { Workspace } from '../src/workspaces/workspace.js';
import { applyDefinition } from '../src/workspaces/repository.js';
import { startEmbeddedPostgres } from '../src/storage/embedded-postgres.js';
import { migrate } from '../src/storage/migrate.js';
import { createPool } from '../src/storage/postgres.js';
import { demoDefinition } from '../test/support/app.js';
import { bulkImportLeads } from './bulk-seed.js';

/** A fresh, migrated database for a benchmark run: on DATABASE_URL's server, else on an embedded server. Dropped at the end. */
export async function benchDatabase(
  poolSize = 70,
): Promise<{ pool: pg.Pool; url: string; where: string; close(): Promise<void> }> {
  let server = process.env.DATABASE_URL;
  let stopEmbedded = async () => undefined;
  let where = 'DATABASE_URL';
  if (!server) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vcrm-bench-'));
    fs.chmodSync(dir, 0o755);
    const embedded = await startEmbeddedPostgres(dir);
    server = embedded.url;
    where = 'embedded PostgreSQL';
    stopEmbedded = async () => {
      await embedded.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    };
  }
  const name = `vcrm_bench_${randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: server });
    await client.connect();
    await client.query(sql);
    await client.end();
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  const pool = createPool(url.toString(), poolSize);
  await migrate(pool);
  return {
    pool,
    url: url.toString(),
    where,
    async close() {
      await pool.end();
      await admin(`DROP DATABASE ${name} WITH (FORCE)`);
      await stopEmbedded();
    },
  };
}

/**
 * A pool as an application without this service's transport would use it: pg's defaults (one statement at a time
 * per connection), for the raw baselines, so they stay the same whatever the service's own pool does.
 */
export function plainPool(connectionString: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString, max });
  pool.on('error', () => undefined);
  return pool;
}

/** Runs `op` from `concurrency` workers until `count` operations are done or `seconds` pass; returns ops/s and latency percentiles (ms). */
export async function measure(
  count: number,
  concurrency: number,
  seconds: number,
  op: (i: number) => Promise<unknown>,
) {
  const latencies: number[] = [];
  let next = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count && performance.now() < deadline) {
        const i = next++;
        const t0 = performance.now();
        await op(i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
  return { ops: latencies.length, perSecond: latencies.length / elapsed, p50: pct(50), p99: pct(99) };
}

export function row(
  label: string,
  result: { ops: number; perSecond: number; p50: number; p99: number },
  baseline?: number,
): string {
  const ratio = baseline ? `  (${((result.perSecond / baseline) * 100).toFixed(0)}% of baseline)` : '';
  return `${label.padEnd(52)} ${result.perSecond.toFixed(0).padStart(7)} /s   p50 ${result.p50.toFixed(2).padStart(7)} ms   p99 ${result.p99.toFixed(2).padStart(7)} ms   n=${result.ops}${ratio}`;
}

/** Linux reports process CPU times in /proc in USER_HZ ticks, which is 100 per second on every mainstream kernel. */
const MS_PER_TICK = 10;

/** CPU milliseconds used so far by each PostgreSQL process this machine runs, by process (pid and start time, so a reused pid counts as a new process; null when none is visible, e.g. a remote server). */
export function postgresCpuMs(): Map<string, number> | null {
  const byProcess = new Map<string, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const close = stat.lastIndexOf(')');
    if (!stat.slice(stat.indexOf('(') + 1, close).startsWith('postgres')) continue;
    const fields = stat.slice(close + 2).split(' ');
    byProcess.set(`${entry}:${fields[19]}`, (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK); // utime, stime; starttime
  }
  return byProcess.size > 0 ? byProcess : null;
}

/** CPU ms the PostgreSQL processes used between two readings; a backend that exited meanwhile loses its last stretch. */
export function postgresCpuBetween(before: Map<string, number>, after: Map<string, number>): number {
  let ms = 0;
  for (const [key, now] of after) ms += now - (before.get(key) ?? 0);
  return ms;
}

export interface CpuCost {
  /** CPU ms per operation of this Node process (every thread: the servers and the load generator). */
  node: number;
  /** CPU ms per operation of the local PostgreSQL processes, or null when the server is not local. */
  postgres: number | null;
}

/** Runs `work` and returns its result with the CPU it cost per operation (`operations` reads the count from the result). */
export async function withCpuCost<T>(
  work: () => Promise<T>,
  operations: (result: T) => number,
): Promise<T & { cpu: CpuCost }> {
  const node0 = process.cpuUsage();
  const pg0 = postgresCpuMs();
  const result = await work();
  const node = process.cpuUsage(node0);
  const pg1 = postgresCpuMs();
  const n = Math.max(1, operations(result));
  return {
    ...result,
    cpu: {
      node: (node.user + node.system) / 1000 / n,
      postgres: pg0 === null || pg1 === null ? null : postgresCpuBetween(pg0, pg1) / n,
    },
  };
}

/**
 * Captures one lead as an API key would, without HTTP: the body normalised with the workspace's settings (a refusal
 * throws: a bench's bodies are meant to be valid) and handed to captureLead. Returns the answer's status.
 */
export async function captureAsKey(
  services: AppServices,
  workspace: Workspace,
  key: KeyLookup,
  body: LeadCreateBody,
  correlationId: string,
): Promise<number> {
  const problems: Record<string, string> = {};
  const submission = normaliseSubmission(body, workspace.settings, services.now(), problems);
  if (Object.keys(problems).length > 0) throw new Error(`bench submission refused: ${JSON.stringify(problems)}`);
  const answer = await captureLead(services, {
    workspace,
    key,
    submission,
    idempotency: null,
    captcha: null,
    context: (at) => ({
      tenantId: workspace.id,
      sandbox: false,
      metadata: { actor: { type: 'key', key_id: key.id, key_name: key.name }, correlation_id: correlationId },
      now: at,
    }),
    now: services.now,
  });
  return answer.status;
}

/** The service on a benchmark's database, its workers off: each benchmark drives the work it measures itself. */
export function benchServices(db: { pool: pg.Pool; url: string }, logLevel = 'silent'): Promise<AppServices> {
  const config = {
    ...loadConfig({
      DATABASE_URL: db.url,
      SECRET_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64'),
      LOG_LEVEL: logLevel,
    }),
    runWorkers: false,
  };
  return createServices(config, { pool: db.pool, url: db.url, kind: 'external', close: async () => undefined });
}

/** A bucket no benchmark's load empties. */
const UNLIMITED = { capacity: 10_000_000, refill_per_second: 1_000_000 };

/**
 * The demo workspace (its slug `slugPrefix-` and a random suffix) on the enterprise plan, with no lead quota and no
 * rate limit a load reaches, and a live secret key with every scope: the load measures the service, not its limits.
 */
export async function unlimitedWorkspace(
  services: AppServices,
  slugPrefix: string,
  keyName: string,
): Promise<{ workspace: Workspace; key: Awaited<ReturnType<typeof createKey>> }> {
  const def = demoDefinition({
    slug: `${slugPrefix}-${randomBytes(3).toString('hex')}`,
    plan: 'enterprise',
    limits: {
      monthly_leads: null,
      rate: { key: UNLIMITED, scopes: Object.fromEntries(SCOPES.map((s) => [s, UNLIMITED])) },
    },
  });
  const { workspace } = await applyDefinition(services.pool, def, services.secretBox);
  const key = await createKey(services.pool, {
    tenantId: workspace.id,
    name: keyName,
    kind: 'secret',
    mode: 'live',
    scopes: [...SCOPES],
  });
  return { workspace, key };
}

const SEED_BATCH = 5000;

/** The i-th seeded lead's name and contact details: different for every i below a billion. */
export function seededPerson(i: number) {
  const n = String(i).padStart(9, '0');
  return {
    full_name: `Seeded Person ${n}`,
    phone: `+919${n}`,
    alt_phone: null,
    email: `seed-${n}@example.com`,
    city: i % 2 ? 'Bengaluru' : 'Delhi',
    state: null,
  };
}

/** The i-th seeded lead's whole submission: a student enquiry whose details vary with i; `message` as given. */
export function seededSubmission(i: number, message: string | null = null): LeadSubmission {
  return {
    ...seededPerson(i),
    country_interest: (['CA', 'AU', 'GB', 'US'] as const)[i % 4]!,
    visa_type: 'student',
    intake: '2027-01',
    course: i % 3 ? 'MSc Computer Science' : null,
    date_of_birth: '2001-04-12',
    highest_qualification: 'bachelors',
    score_percent: 72.5,
    english_test: i % 2 ? { type: 'IELTS', overall: 7 } : null,
    work_experience_years: i % 5,
    passport_available: true,
    previous_refusals: 0,
    utm: { source: 'google', medium: 'cpc', campaign: 'seed' },
    landing_page_url: 'https://www.example.com/study-abroad',
    custom_fields: { preferred_callback: 'evening' },
    message,
  };
}

/**
 * Seeds `count` live leads through the bulk path (bulk-seed.ts), from the API source and a system actor named
 * `actorName`: the i-th is `submission(i)`, made `startMs` plus i seconds.
 */
export async function seedLeads(
  pool: pg.Pool,
  workspace: Workspace,
  count: number,
  submission: (i: number) => LeadSubmission,
  startMs: number,
  actorName: string,
): Promise<void> {
  for (let from = 0; from < count; from += SEED_BATCH) {
    const items = Array.from({ length: Math.min(SEED_BATCH, count - from) }, (_, j) => ({
      submission: submission(from + j),
      at: new Date(startMs + (from + j) * 1000),
    }));
    await bulkImportLeads(
      pool,
      workspace,
      false,
      { key: 'api', name: 'API' },
      { type: 'system', name: actorName },
      items,
    );
  }
}

/** The workspace's owner, with a console account whose password is `password`. */
export async function consoleOwner(
  pool: pg.Pool,
  workspace: Workspace,
  password: string,
): Promise<{ owner: Workspace['settings']['users'][number]; account: StaffAccount }> {
  const owner = workspace.settings.users.find((u) => u.role === 'owner')!;
  const account = await ensureAccount(pool, owner, new Date());
  await setPassword(pool, account.id, password, new Date());
  return { owner, account };
}

/** Signs in through the console's form at `origin` (the service's base URL): the session's cookie. */
export async function consoleCookie(origin: string, email: string, password: string): Promise<string> {
  const signIn = await fetch(`${origin}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
    body: new URLSearchParams({ email, password }),
  });
  return signIn.headers.get('set-cookie')!.split(';')[0]!;
}
