/*
 * What one lead capture costs, sealed and not sealed, taken apart: Node CPU per capture and the WAL it writes by
 * relation (heap and each index, with full-page images apart), read with pg_walinspect and kept to this run's
 * database, so other databases' traffic on the same server does not count. Captures alternate in batches between
 * the two stores (drift and JIT warm-up fall on both). A diagnostic for docs/benchmarks.md, not a goal's benchmark.
 *
 *   npx tsx bench/lead-cost.ts            (BENCH_CAPTURES per mode, default 3000; BENCH_CLIENTS, default 1)
 *
 * BENCH_SAME=plain or BENCH_SAME=sealed runs both halves with the same store: an A/A check of the method (the two
 * halves should then agree within a few per cent).
 *
 * Needs a superuser on DATABASE_URL's server (CREATE EXTENSION pg_walinspect).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { AppServices } from '../src/bootstrap.js';
import type { LeadCreateBody } from '../src/domain/leads/submission.js';
import { PostgresEventStore } from '../src/events/postgres-event-store.js';
import { projections } from '../src/projections/index.js';
import { findKeyByValue, type KeyLookup } from '../src/keys/repository.js';
import type { Workspace } from '../src/workspaces/workspace.js';
import {
  benchDatabase,
  benchServices,
  captureAsKey,
  postgresCpuBetween,
  postgresCpuMs,
  unlimitedWorkspace,
} from './support.js';

const CAPTURES = Number(process.env.BENCH_CAPTURES ?? 3000);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 1);
const BATCH = 100;

interface Tally {
  captures: number;
  cpuMs: number;
  /** Of cpuMs, the kernel's share (sockets, page faults). */
  sysMs: number;
  /** CPU of the local PostgreSQL server's processes (null: not local); includes the WAL readings' own statements. */
  pgMs: number | null;
  wal: Map<string, { records: number; bytes: number; fpiBytes: number }>;
}

async function main(): Promise<void> {
  const db = await benchDatabase(20);
  const { pool } = db;
  try {
    await pool.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
    const sealed = await benchServices(db);
    const plain: AppServices = {
      ...sealed,
      store: new PostgresEventStore(pool, projections, { namedStatements: true }),
    };
    const {
      workspace,
      key: { value },
    } = await unlimitedWorkspace(sealed, 'cost', 'cost');
    const key = (await findKeyByValue(pool, value))!;
    const ws = (await sealed.workspaces.get(workspace.id, key.workspace_revision))!;
    const dbOid = (await pool.query<{ oid: number }>('SELECT oid FROM pg_database WHERE datname = current_database()'))
      .rows[0]!.oid;

    const tallies = { sealed: emptyTally(), plain: emptyTally() };
    let seq = 0;
    const capture = (services: AppServices) => captureOne(services, ws, key, ++seq);
    // Warm-up, not counted.
    for (let i = 0; i < 300; i++) await capture(i % 2 ? sealed : plain);
    for (let done = 0; done < CAPTURES; done += BATCH) {
      for (const [mode, services] of [
        ['sealed', process.env.BENCH_SAME === 'plain' ? plain : sealed],
        ['plain', process.env.BENCH_SAME === 'sealed' ? sealed : plain],
      ] as const) {
        const start = await lsn(pool);
        const cpu0 = process.cpuUsage();
        const pg0 = postgresCpuMs();
        let next = 0;
        await Promise.all(
          Array.from({ length: CLIENTS }, async () => {
            while (next++ < BATCH) await capture(services);
          }),
        );
        const cpu = process.cpuUsage(cpu0);
        const pg1 = postgresCpuMs();
        const end = await lsn(pool);
        const tally = tallies[mode];
        tally.captures += BATCH;
        tally.cpuMs += (cpu.user + cpu.system) / 1000;
        tally.sysMs += cpu.system / 1000;
        tally.pgMs = pg0 && pg1 && tally.pgMs !== null ? tally.pgMs + postgresCpuBetween(pg0, pg1) : null;
        await addWal(pool, dbOid, start, end, tally.wal);
      }
    }
    report('sealed', tallies.sealed);
    report('not sealed', tallies.plain);
    await sealed.rateLimits.close();
  } finally {
    await db.close();
  }
}

function emptyTally(): Tally {
  return { captures: 0, cpuMs: 0, sysMs: 0, pgMs: 0, wal: new Map() };
}

async function lsn(pool: import('pg').Pool): Promise<string> {
  return (await pool.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn')).rows[0]!.lsn;
}

/**
 * Waits until the WAL is flushed up to `end`: pg_walinspect reads only flushed WAL, and the insert position can be
 * ahead of it for a moment (records of no commit yet, which the WAL writer flushes within wal_writer_delay).
 */
async function flushedTo(pool: import('pg').Pool, end: string): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const { rows } = await pool.query<{ flushed: boolean }>(
      'SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn AS flushed',
      [end],
    );
    if (rows[0]!.flushed) return;
    await sleep(20);
  }
  throw new Error(`The WAL was not flushed up to ${end} within a second`);
}

/** This database's WAL records between two positions, by relation (or by record type when they name none). */
async function addWal(
  pool: import('pg').Pool,
  dbOid: number,
  start: string,
  end: string,
  into: Tally['wal'],
): Promise<void> {
  await flushedTo(pool, end);
  const rows = await pool.query<{ what: string; records: string; bytes: string; fpi: string }>(
    `WITH recs AS (
       SELECT resource_manager, record_type, record_length, fpi_length,
              substring(block_ref from 'rel \\d+/' || $3::text || '/(\\d+)') AS filenode, block_ref
         FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)
     )
     SELECT coalesce(c.relname, r.resource_manager || ':' || split_part(r.record_type, ' ', 1)) AS what,
            count(*) AS records, sum(r.record_length) AS bytes, sum(r.fpi_length) AS fpi
       FROM recs r LEFT JOIN pg_class c ON c.relfilenode = r.filenode::oid
      WHERE r.filenode IS NOT NULL OR r.resource_manager IN ('Transaction', 'Standby')
      GROUP BY 1`,
    [start, end, String(dbOid)],
  );
  for (const row of rows.rows) {
    const t = into.get(row.what) ?? { records: 0, bytes: 0, fpiBytes: 0 };
    t.records += Number(row.records);
    t.bytes += Number(row.bytes);
    t.fpiBytes += Number(row.fpi);
    into.set(row.what, t);
  }
}

function report(label: string, tally: Tally): void {
  const n = tally.captures;
  const total = [...tally.wal.values()].reduce((s, t) => s + t.bytes, 0);
  console.log(
    `${label}: ${n} captures, ${CLIENTS} client(s): Node CPU ${(tally.cpuMs / n).toFixed(3)} ms/capture (kernel ${(tally.sysMs / n).toFixed(3)}), PostgreSQL CPU ${tally.pgMs === null ? 'n/a' : (tally.pgMs / n).toFixed(3)} ms/capture; WAL ${(total / n).toFixed(0)} B/capture`,
  );
  for (const [what, t] of [...tally.wal.entries()].sort((a, b) => b[1].bytes - a[1].bytes))
    console.log(
      `   ${what.padEnd(48)} ${(t.records / n).toFixed(2).padStart(6)} records  ${(t.bytes / n).toFixed(0).padStart(6)} B  (full pages ${(t.fpiBytes / n).toFixed(0)} B)`,
    );
}

async function captureOne(services: AppServices, workspace: Workspace, key: KeyLookup, seq: number): Promise<void> {
  const n = String(seq).padStart(7, '0');
  const body: LeadCreateBody = {
    full_name: `Cost Person ${n}`,
    phone: `79${n.padStart(8, '0')}`,
    email: `cost-${n}@example.com`,
    city: 'Delhi',
    visa_type: 'student',
    country_interest: 'CA',
    intake: '2027-01',
    consent: true,
  };
  const status = await captureAsKey(services, workspace, key, body, `cost_${seq}`);
  if (status !== 201) throw new Error(`capture answered ${status}`);
}

await main();
