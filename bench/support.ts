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

/** CPU milliseconds used so far by each PostgreSQL process this machine runs (or of those of `pids`), by process (pid and start time, so a reused pid counts as a new process; null when none is visible, e.g. a remote server). */
export function postgresCpuMs(pids?: readonly number[]): Map<string, number> | null {
  const byProcess = new Map<string, number>();
  for (const entry of pids?.map(String) ?? fs.readdirSync('/proc')) {
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

/** A bucket no benchmark's load empties, at the largest a workspace definition takes (MAX_BUCKET). */
const UNLIMITED = { capacity: 1_000_000, refill_per_second: 1_000_000 };

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

/** The body a creation load posts for its n-th new person in load `phase` (two digits, so each load's people are new). */
export function benchLeadBody(n: number, phase: string): LeadCreateBody {
  const digits = String(n).padStart(7, '0');
  return {
    full_name: `Bench Person ${digits}`,
    phone: `7${phase}${digits}`,
    email: `bench-${phase}-${digits}@example.com`,
    city: n % 2 ? 'Bengaluru' : 'Delhi',
    visa_type: 'student',
    country_interest: 'CA',
    intake: '2027-01',
    utm: { source: 'bench', campaign: 'load' },
    message: 'Benchmark enquiry',
    consent: true,
  };
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

/**
 * The WAL records of one kind (resource manager and record type) that touched one relation, or that ended one of a
 * database's transactions (relation `commit records`): what a measured stretch of work wrote to the log.
 */
export interface WalRecords {
  /** The relation's name, `<table> TOAST` for a TOAST table's, or `commit records`. */
  relation: string;
  /** The table the relation belongs to (itself for a table; the owner for an index or a TOAST table). */
  table: string;
  /** `heap`, the index's access method (`btree`, `gin`), `TOAST`, `sequence` or `transaction`. */
  kind: string;
  /** Resource manager and record type, e.g. `Heap:INSERT`. */
  recordType: string;
  /** Records that carried no full-page image, and their bytes. */
  records: number;
  bytes: number;
  /** Records that carried one or more, their bytes less the images, and the images' bytes. */
  imaged: number;
  imagedBytes: number;
  imageBytes: number;
}

/** WAL records by relation and kind (walBetween), summed over stretches of work. */
export type WalTally = Map<string, WalRecords>;

/**
 * Bytes the records would have taken without full-page images. A record that carries an image of a block omits the
 * data it would otherwise log for that block (the image holds it), so its length less the image understates it: such
 * records count at the mean length of the same relation's records of the same kind that carried none (at their
 * length less the images when every one carried one). Then the figure does not depend on which work ran first after
 * a checkpoint, which decides where the images fall.
 */
export function walBytes(r: WalRecords): number {
  const imagedAs = r.records > 0 ? r.bytes / r.records : r.imaged > 0 ? r.imagedBytes / r.imaged : 0;
  return r.bytes + r.imaged * imagedAs;
}

/** Adds `from`'s records into `into`. */
export function addWal(into: WalTally, from: WalTally): WalTally {
  for (const [key, r] of from) {
    const t = into.get(key);
    if (!t) into.set(key, { ...r });
    else
      Object.assign(t, {
        records: t.records + r.records,
        bytes: t.bytes + r.bytes,
        imaged: t.imaged + r.imaged,
        imagedBytes: t.imagedBytes + r.imagedBytes,
        imageBytes: t.imageBytes + r.imageBytes,
      });
  }
  return into;
}

/** A tally's records, bytes without images (walBytes) and the images' bytes. */
export function walTotal(tally: WalTally): { records: number; bytes: number; imageBytes: number } {
  let records = 0;
  let bytes = 0;
  let imageBytes = 0;
  for (const r of tally.values()) {
    records += r.records + r.imaged;
    bytes += walBytes(r);
    imageBytes += r.imageBytes;
  }
  return { records, bytes, imageBytes };
}

type Queryable = Pick<pg.Client, 'query'>;

/**
 * Readies `db` for walBetween: pg_walinspect installed in it (CREATE EXTENSION needs a superuser). Its oid, or null
 * when the extension cannot be had.
 */
export async function walInspection(db: Queryable): Promise<number | null> {
  try {
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
  } catch {
    return null;
  }
  const { rows } = await db.query<{ oid: number }>('SELECT oid FROM pg_database WHERE datname = current_database()');
  return rows[0]!.oid;
}

/** Where the next WAL record will go. */
export async function walPosition(db: Queryable): Promise<string> {
  return (await db.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn')).rows[0]!.lsn;
}

/**
 * Waits until the WAL is flushed up to `end`: pg_walinspect reads only flushed WAL, and the insert position can be
 * ahead of it for a moment (records of no commit yet, which the WAL writer flushes within wal_writer_delay).
 */
async function walFlushedTo(db: Queryable, end: string): Promise<void> {
  for (let attempt = 0; attempt < 250; attempt++) {
    const { rows } = await db.query<{ flushed: boolean }>(
      'SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn AS flushed',
      [end],
    );
    if (rows[0]!.flushed) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`The WAL was not flushed up to ${end} within five seconds`);
}

/**
 * The WAL records between two positions that belong to database `dbOid` (walInspection), by relation and kind: a
 * record counts for the relation of its first block, and a record that names no block (a commit) when its
 * transaction wrote a block of this database in the same stretch. Other databases' work on the same server does not
 * count, nor the server's own records (checkpoints, running-transaction snapshots). `db` must be connected to that
 * database, so the relations get their names.
 */
export async function walBetween(db: Queryable, dbOid: number, start: string, end: string): Promise<WalTally> {
  await walFlushedTo(db, end);
  const { rows } = await db.query<{
    relation: string;
    table_name: string;
    kind: string;
    record_type: string;
    imaged: boolean;
    records: string;
    bytes: string;
    fpi: string;
  }>(
    `WITH recs AS (
       SELECT xid::text::bigint AS xid, resource_manager || ':' || split_part(record_type, ' ', 1) AS record_type,
              record_length, fpi_length, coalesce(block_ref, '') = '' AS blockless,
              substring(block_ref from 'rel \\d+/' || $3::text || '/(\\d+)')::oid AS filenode
         FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)
     ),
     ours AS (SELECT DISTINCT xid FROM recs WHERE filenode IS NOT NULL AND xid <> 0),
     named AS (
       SELECT r.*, c.relname::text AS relname, c.relkind, am.amname::text AS amname,
              coalesce(i.indrelid, c.oid) AS table_oid
         FROM recs r
         LEFT JOIN pg_class c ON c.relfilenode = r.filenode AND c.relfilenode <> 0
         LEFT JOIN pg_am am ON am.oid = c.relam AND c.relkind = 'i'
         LEFT JOIN pg_index i ON i.indexrelid = c.oid
        WHERE r.filenode IS NOT NULL OR (r.blockless AND r.xid IN (SELECT xid FROM ours))
     ),
     labelled AS (
       SELECT n.*,
              CASE WHEN t.relname LIKE 'pg\\_toast\\_%' THEN substring(t.relname from 'pg_toast_(\\d+)')::oid::regclass::text
                   ELSE t.relname::text END AS owner,
              t.relname LIKE 'pg\\_toast\\_%' AS toast
         FROM named n LEFT JOIN pg_class t ON t.oid = n.table_oid
     )
     SELECT CASE WHEN filenode IS NULL THEN 'commit records'
                 WHEN relname IS NULL THEN 'relfilenode ' || filenode
                 WHEN toast THEN owner || ' TOAST' || CASE WHEN relkind = 'i' THEN ' index' ELSE '' END
                 ELSE relname END AS relation,
            CASE WHEN filenode IS NULL THEN 'commit records' ELSE coalesce(owner, 'relfilenode ' || filenode) END AS table_name,
            CASE WHEN filenode IS NULL THEN 'transaction' WHEN toast THEN 'TOAST' WHEN relkind = 'S' THEN 'sequence'
                 WHEN relkind = 'i' THEN amname ELSE 'heap' END AS kind,
            record_type, fpi_length > 0 AS imaged, count(*) AS records,
            sum(record_length - fpi_length) AS bytes, sum(fpi_length) AS fpi
       FROM labelled
      GROUP BY 1, 2, 3, 4, 5`,
    [start, end, String(dbOid)],
  );
  const tally: WalTally = new Map();
  for (const row of rows) {
    const key = `${row.relation}\t${row.record_type}`;
    const r = tally.get(key) ?? {
      relation: row.relation,
      table: row.table_name,
      kind: row.kind,
      recordType: row.record_type,
      records: 0,
      bytes: 0,
      imaged: 0,
      imagedBytes: 0,
      imageBytes: 0,
    };
    if (row.imaged) {
      r.imaged += Number(row.records);
      r.imagedBytes += Number(row.bytes);
      r.imageBytes += Number(row.fpi);
    } else {
      r.records += Number(row.records);
      r.bytes += Number(row.bytes);
    }
    tally.set(key, r);
  }
  return tally;
}

/**
 * Keeps the WAL that walBetween will read: a temporary physical replication slot of `db`'s session (dropped when the
 * session ends), moved up to each stretch's start by the function returned. Without it a checkpoint during a stretch
 * (another run's CHECKPOINT on a shared server) may recycle the stretch's first segments before they are read. Null
 * when the server refuses a slot (not a superuser, no free slot, wal_level minimal): the reading may then fail.
 */
export async function walKeep(db: pg.Client): Promise<((from: string) => Promise<void>) | null> {
  const slot = `vcrm_bench_${randomBytes(4).toString('hex')}`;
  try {
    await db.query('SELECT pg_create_physical_replication_slot($1, true, true)', [slot]);
  } catch {
    return null;
  }
  return async (from) => {
    await db.query('SELECT pg_replication_slot_advance($1, $2::pg_lsn)', [slot, from]);
  };
}

/**
 * Prints each table's writes since the database's statistics began: rows inserted, rows updated, and the share of
 * updates that were HOT (no new index entries; pg_stat_user_tables.n_tup_hot_upd / n_tup_upd), so how the design
 * writes can be read from a bench's output. Waits for the writers' counters to reach the statistics first.
 */
export async function printHotShare(label: string, pool: Queryable, tables: readonly string[]): Promise<void> {
  // A backend sends its counters at most once a second, once idle.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const { rows } = await pool.query<{ relname: string; ins: number; upd: number; hot: number }>(
    `SELECT relname, n_tup_ins::bigint AS ins, n_tup_upd::bigint AS upd, n_tup_hot_upd::bigint AS hot
       FROM pg_stat_user_tables WHERE relname = ANY($1::text[]) ORDER BY relname`,
    [tables],
  );
  console.log(`${label}: writes per table (inserted, updated, HOT share of updates)`);
  for (const r of rows)
    console.log(
      `  ${r.relname.padEnd(24)} ${r.ins.toLocaleString().padStart(11)} ins ${r.upd.toLocaleString().padStart(11)} upd   HOT ${
        r.upd === 0 ? '   —' : `${((100 * r.hot) / r.upd).toFixed(1)}%`
      }`,
    );
}

/** Prints how often each index of `table` was scanned since the statistics began (pg_stat_user_indexes.idx_scan). */
export async function printIndexUse(label: string, pool: Queryable, table: string): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const { rows } = await pool.query<{ name: string; scans: number; bytes: number }>(
    `SELECT indexrelname AS name, idx_scan::bigint AS scans, pg_relation_size(indexrelid)::bigint AS bytes
       FROM pg_stat_user_indexes WHERE relname = $1 ORDER BY idx_scan DESC, indexrelname`,
    [table],
  );
  console.log(`${label}: scans of each index of ${table} (size)`);
  for (const r of rows)
    console.log(
      `  ${r.name.padEnd(30)} ${r.scans.toLocaleString().padStart(11)} scans   ${(r.bytes / 2 ** 20).toFixed(1)} MiB`,
    );
}

/** The read models' tables and the log's, whose writes printHotShare shows. */
export const WRITTEN_TABLES = [
  'events',
  'leads',
  'lead_order',
  'applications',
  'tasks',
  'task_timers',
  'invoices',
  'documents',
  'webhook_deliveries',
  'personal_data_keys',
  'lead_write_intents',
  'quota_counters',
] as const;

/** Zeroes the database's statistics counters (pg_stat_reset), so the next step's are its own. */
export async function resetStatistics(pool: Queryable): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await pool.query('SELECT pg_stat_reset()');
}
