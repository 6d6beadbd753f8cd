/*
 * What one lead capture costs, sealed and not sealed, taken apart: Node CPU per capture and the WAL it writes by
 * relation (heap and each index, with full-page images apart), read with pg_walinspect and kept to this run's
 * database (support.ts, walBetween), so other databases' traffic on the same server does not count; a record that
 * carried full-page images counts at its kind's mean length without them (walBytes). Captures alternate in batches
 * between the two stores (drift and JIT warm-up fall on both). A diagnostic for docs/benchmarks.md, not a goal's
 * benchmark.
 *
 *   node --import ./scripts/typescript-resolve.mjs bench/lead-cost.ts   (BENCH_CAPTURES per mode, default 3000; BENCH_CLIENTS, default 1)
 *
 * BENCH_SAME=plain or BENCH_SAME=sealed runs both halves with the same store: an A/A check of the method (the two
 * halves should then agree within a few per cent).
 *
 * Needs a superuser on DATABASE_URL's server (CREATE EXTENSION pg_walinspect).
 */
import pg from 'pg';
import type { AppServices } from '../src/bootstrap.js';
import type { LeadCreateBody } from '../src/domain/leads/submission.js';
import { PostgresEventStore } from '../src/events/postgres-event-store.js';
import { projections } from '../src/projections/index.js';
import { findKeyByValue, type KeyLookup } from '../src/keys/repository.js';
import type { Workspace } from '../src/workspaces/workspace.js';
import {
  addWal,
  benchDatabase,
  benchServices,
  captureAsKey,
  postgresCpuBetween,
  postgresCpuMs,
  unlimitedWorkspace,
  walBetween,
  walBytes,
  walInspection,
  walKeep,
  walPosition,
  type WalTally,
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
  wal: WalTally;
}

async function main(): Promise<void> {
  const db = await benchDatabase(20);
  const { pool } = db;
  let closeKeeper: () => Promise<void> = async () => undefined;
  try {
    const dbOid = await walInspection(pool);
    if (dbOid === null) throw new Error('pg_walinspect cannot be had: run with a superuser on DATABASE_URL');
    // A session of its own holds the slot that keeps each batch's WAL until it is read.
    const keeper = new pg.Client({ connectionString: db.url });
    await keeper.connect();
    closeKeeper = () => keeper.end();
    const keepWal = await walKeep(keeper);
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
        const start = await walPosition(pool);
        await keepWal?.(start);
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
        const end = await walPosition(pool);
        const tally = tallies[mode];
        tally.captures += BATCH;
        tally.cpuMs += (cpu.user + cpu.system) / 1000;
        tally.sysMs += cpu.system / 1000;
        tally.pgMs = pg0 && pg1 && tally.pgMs !== null ? tally.pgMs + postgresCpuBetween(pg0, pg1) : null;
        addWal(tally.wal, await walBetween(pool, dbOid, start, end));
      }
    }
    report('sealed', tallies.sealed);
    report('not sealed', tallies.plain);
    await sealed.rateLimits.close();
  } finally {
    await closeKeeper();
    await db.close();
  }
}

function emptyTally(): Tally {
  return { captures: 0, cpuMs: 0, sysMs: 0, pgMs: 0, wal: new Map() };
}

function report(label: string, tally: Tally): void {
  const n = tally.captures;
  // By relation; a record that carried full-page images counts at its kind's mean without them (walBytes).
  const byRelation = new Map<string, { records: number; bytes: number; fpiBytes: number }>();
  for (const r of tally.wal.values()) {
    const t = byRelation.get(r.relation) ?? { records: 0, bytes: 0, fpiBytes: 0 };
    t.records += r.records + r.imaged;
    t.bytes += walBytes(r);
    t.fpiBytes += r.imageBytes;
    byRelation.set(r.relation, t);
  }
  const total = [...byRelation.values()].reduce((s, t) => s + t.bytes, 0);
  console.log(
    `${label}: ${n} captures, ${CLIENTS} client(s): Node CPU ${(tally.cpuMs / n).toFixed(3)} ms/capture (kernel ${(tally.sysMs / n).toFixed(3)}), PostgreSQL CPU ${tally.pgMs === null ? 'n/a' : (tally.pgMs / n).toFixed(3)} ms/capture; WAL ${(total / n).toFixed(0)} B/capture, full-page images excluded`,
  );
  for (const [what, t] of [...byRelation.entries()].sort((a, b) => b[1].bytes - a[1].bytes))
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
