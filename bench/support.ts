import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { AppServices } from '../src/bootstrap.js';
import { captureLead } from '../src/commands/leads/capture-lead.js';
import type { KeyLookup } from '../src/keys/repository.js';
import { normaliseSubmission, type LeadCreateBody } from '../src/domain/leads/submission.js';
import type { Workspace } from '../src/workspaces/workspace.js';
import { startEmbeddedPostgres } from '../src/storage/embedded-postgres.js';
import { migrate } from '../src/storage/migrate.js';
import { createPool } from '../src/storage/postgres.js';

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
