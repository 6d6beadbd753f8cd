/*
 * What a created lead costs the service against the CRUD twin (crud-twin.ts): POST /v1/leads at BENCH_CLIENTS
 * (default 16) over loopback to each in turn, twice, the load in this thread. Per created lead: this process's user
 * and system CPU, CPU by thread (/proc), bytes and system calls of reading and writing, and pg_stat_statements of the
 * run's database by statement (calls, execution time, rows, buffers). BENCH_PROFILE=1 adds the main thread's sampled
 * profile, service against twin, by function and by file or package. A diagnostic for docs/benchmarks.md, not a
 * goal's benchmark. Needs a server that preloads pg_stat_statements (docs/benchmarks.md, the recipe under
 * bench:webhooks, port 55432).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:55432/postgres \
 *     node --import ./scripts/typescript-resolve.mjs bench/capture-statements.ts   (BENCH_REQUESTS, default 5000)
 */
import fs from 'node:fs';
import http from 'node:http';
import { Session } from 'node:inspector/promises';
import pg from 'pg';
import type { Profile } from './slice-profiles.js';
import { buildApp } from '../src/http/app.js';
import { findKeyByValue } from '../src/keys/repository.js';
import { copySeededLeads, createTwinTables, startCrudTwin } from './crud-twin.js';
import {
  benchDatabase,
  benchLeadBody,
  benchServices,
  plainPool,
  postgresCpuBetween,
  postgresCpuMs,
  seededSubmission,
  seedLeads,
  unlimitedWorkspace,
} from './support.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 5000);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 16);
const LEADS = Number(process.env.BENCH_LEADS ?? 20_000);
const PROFILE = process.env.BENCH_PROFILE === '1';

/** Each thread of this process: its name and CPU ticks (user + system, 10 ms each), from /proc. */
function threadCpu(): Map<string, { name: string; ticks: number }> {
  const out = new Map<string, { name: string; ticks: number }>();
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(tid, { name, ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // the thread ended
    }
  }
  return out;
}

let seq = 0;
function leadBody(phase: string): string {
  seq += 1;
  return JSON.stringify(benchLeadBody(seq, phase));
}

/** REQUESTS creations at CLIENTS at once; every answer must be 201. */
async function post(port: number, auth: string, phase: string, requests: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
  let left = requests;
  const one = () =>
    new Promise<number>((resolve, reject) => {
      const body = leadBody(phase);
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/v1/leads',
          agent,
          headers: {
            authorization: auth,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (left > 0) {
        left -= 1;
        const status = await one();
        if (status !== 201) throw new Error(`answered ${status}`);
      }
    }),
  );
  agent.destroy();
}

/** This process's bytes and system calls of reading and writing (sockets included), from /proc. */
function processIo(): Record<'rchar' | 'wchar' | 'syscr' | 'syscw', number> {
  const fields = Object.fromEntries(
    fs
      .readFileSync('/proc/self/io', 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(': '))
      .map(([k, v]) => [k, Number(v)]),
  );
  return { rchar: fields.rchar, wchar: fields.wchar, syscr: fields.syscr, syscw: fields.syscw };
}

/** Adds a profile's own time per sample (µs, divided by `per`) into `into`, by function and place. */
function addSelfTimes(into: Map<string, number>, profile: Profile, per: number): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  profile.samples.forEach((id, i) => {
    const node = byId.get(id)!;
    if (node.callFrame.functionName === '(idle)') return;
    const url = node.callFrame.url.replace(/^file:\/\/\/work\/main\//, '');
    const key = `${node.callFrame.functionName || '(anonymous)'} ${url}:${node.callFrame.lineNumber + 1}`;
    into.set(key, (into.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0) / per);
  });
}

function byPlace(times: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [key, us] of times) {
    const url = key.slice(key.indexOf(' ') + 1).replace(/:\d+$/, '');
    const place = url.startsWith('node_modules/')
      ? url
          .split('/')
          .slice(0, url.startsWith('node_modules/@') ? 3 : 2)
          .join('/')
      : url.startsWith('src/')
        ? url
        : url === ''
          ? key.slice(0, key.indexOf(' '))
          : url.replace(/\/[^/]*$/, '');
    out.set(place, (out.get(place) ?? 0) + us);
  }
  return out;
}

function printDiff(service: Map<string, number>, twin: Map<string, number>, what: string): void {
  const keys = new Set([...service.keys(), ...twin.keys()]);
  const rows = [...keys].map((k) => ({ k, s: service.get(k) ?? 0, t: twin.get(k) ?? 0 }));
  const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  console.log(
    `\nMain thread busy per lead: service ${total(service).toFixed(0)} µs, twin ${total(twin).toFixed(0)} µs; by ${what}, largest differences:`,
  );
  console.log('  service µs   twin µs   difference');
  for (const r of rows.sort((a, b) => b.s - b.t - (a.s - a.t)).slice(0, 45))
    console.log(
      `  ${r.s.toFixed(1).padStart(10)}   ${r.t.toFixed(1).padStart(7)}   ${(r.s - r.t).toFixed(1).padStart(10)}   ${r.k}`,
    );
}

interface StatementRow {
  query: string;
  calls: string;
  exec_ms: number;
  plan_ms: number;
  rows: string;
  hit: string;
  read: string;
  dirtied: string;
}

async function statements(admin: pg.Client, dbOid: number): Promise<StatementRow[]> {
  const { rows } = await admin.query<StatementRow>(
    `SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls::text, total_exec_time AS exec_ms,
            total_plan_time AS plan_ms, rows::text, shared_blks_hit::text AS hit, shared_blks_read::text AS read,
            shared_blks_dirtied::text AS dirtied
       FROM pg_stat_statements WHERE dbid = $1 ORDER BY total_exec_time DESC`,
    [dbOid],
  );
  return rows;
}

function print(label: string, rows: StatementRow[], leads: number, cpuMs: number | null): void {
  const exec = rows.reduce((s, r) => s + r.exec_ms, 0);
  const plan = rows.reduce((s, r) => s + r.plan_ms, 0);
  const calls = rows.reduce((s, r) => s + Number(r.calls), 0);
  console.log(
    `\n${label}: ${leads} leads; per lead ${(calls / leads).toFixed(2)} statements, execution ${((exec / leads) * 1000).toFixed(0)} µs,` +
      ` planning ${((plan / leads) * 1000).toFixed(0)} µs` +
      (cpuMs === null ? '' : `, PostgreSQL CPU ${((cpuMs / leads) * 1000).toFixed(0)} µs`),
  );
  console.log('  calls/lead   exec µs/lead   plan µs/lead   rows/call   blocks hit/lead   statement');
  for (const r of rows) {
    const calls = Number(r.calls);
    console.log(
      `  ${(calls / leads).toFixed(2).padStart(10)}   ${((r.exec_ms / leads) * 1000).toFixed(1).padStart(12)}   ${((r.plan_ms / leads) * 1000).toFixed(1).padStart(12)}` +
        `   ${(Number(r.rows) / calls).toFixed(2).padStart(9)}   ${(Number(r.hit) / leads).toFixed(1).padStart(15)}   ${r.query.slice(0, 150)}`,
    );
  }
}

async function main(): Promise<void> {
  const db = await benchDatabase(40);
  const { pool, url } = db;
  const rawPool = plainPool(url, 40);
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const closers: (() => Promise<unknown>)[] = [];
  try {
    await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const dbOid = Number(
      (await admin.query<{ oid: string }>('SELECT oid FROM pg_database WHERE datname = current_database()')).rows[0]!
        .oid,
    );
    await createTwinTables(pool);
    const services = await benchServices(db);
    closers.push(() => services.rateLimits.close());
    const { workspace, key } = await unlimitedWorkspace(services, 'bench', 'bench');
    const benchKey = (await findKeyByValue(pool, key.value))!;
    const benchWorkspace = (await services.workspaces.get(workspace.id, benchKey.workspace_revision))!;
    await seedLeads(pool, workspace, LEADS, (i) => seededSubmission(i), Date.now() - LEADS * 1000, 'bench seed');
    await pool.query('VACUUM (ANALYZE) leads, lead_order, events');
    await copySeededLeads(pool);
    await pool.query('VACUUM (ANALYZE) twin_leads');
    const app = await buildApp(services, { logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    closers.push(() => app.close());
    const twin = await startCrudTwin(rawPool, [{ value: key.value, workspace: benchWorkspace }]);
    closers.push(() => twin.close());
    const auth = `Bearer ${key.value}`;
    const session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    const selfTimes = { service: new Map<string, number>(), twin: new Map<string, number>() };
    const appPort = (app.server.address() as { port: number }).port;

    for (const [label, port, phase] of [
      ['service', appPort, 1],
      ['twin', twin.port, 3],
      ['service', appPort, 5],
      ['twin', twin.port, 7],
    ] as const) {
      await post(port, auth, String(10 + phase), 1000); // warm-up, not counted
      await admin.query('SELECT pg_stat_statements_reset()');
      const cpu0 = postgresCpuMs();
      if (PROFILE) await session.post('Profiler.start');
      const threads0 = threadCpu();
      const node0 = process.cpuUsage();
      const io0 = processIo();
      await post(port, auth, String(11 + phase), REQUESTS);
      const io1 = processIo();
      const node1 = process.cpuUsage(node0);
      const threads1 = threadCpu();
      const byName = new Map<string, number>();
      for (const [tid, t1] of threads1) {
        const t0 = threads0.get(tid);
        byName.set(t1.name, (byName.get(t1.name) ?? 0) + t1.ticks - (t0?.ticks ?? 0));
      }
      console.log(
        `  CPU by thread, µs per lead: ${[...byName]
          .filter(([, ticks]) => ticks > 0)
          .map(([name, ticks]) => `${name} ${((ticks * 10_000) / REQUESTS).toFixed(0)}`)
          .join(', ')}`,
      );
      if (PROFILE) {
        const { profile } = (await session.post('Profiler.stop')) as { profile: Profile };
        addSelfTimes(selfTimes[label], profile, REQUESTS * 2);
      }
      const cpu1 = postgresCpuMs();
      console.log(
        `\n${label}: this process (load included) per lead: user ${(node1.user / REQUESTS).toFixed(0)} µs, system ${(node1.system / REQUESTS).toFixed(0)} µs;` +
          ` written ${((io1.wchar - io0.wchar) / REQUESTS).toFixed(0)} B in ${((io1.syscw - io0.syscw) / REQUESTS).toFixed(1)} calls,` +
          ` read ${((io1.rchar - io0.rchar) / REQUESTS).toFixed(0)} B in ${((io1.syscr - io0.syscr) / REQUESTS).toFixed(1)} calls`,
      );
      const rows = (await statements(admin, dbOid)).filter((r) => !r.query.includes('pg_stat_statements'));
      print(label, rows, REQUESTS, cpu0 && cpu1 ? postgresCpuBetween(cpu0, cpu1) : null);
    }
    if (PROFILE) {
      printDiff(selfTimes.service, selfTimes.twin, 'function');
      printDiff(byPlace(selfTimes.service), byPlace(selfTimes.twin), 'file or package');
    }
  } finally {
    for (const close of closers.reverse()) await close();
    await admin.end();
    await rawPool.end();
    await db.close();
  }
}

await main();
