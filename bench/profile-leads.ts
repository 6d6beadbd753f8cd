/**
 * Where a POST /v1/leads spends the main thread's time (node --import ./scripts/typescript-resolve.mjs
 * bench/profile-leads.ts).
 *
 * Builds the service on a fresh database (DATABASE_URL's server, else embedded), loads POST /v1/leads (a new person
 * each time) from PROFILE_CLIENTS (default 16) closed-loop clients in a worker thread over keep-alive HTTP on
 * 127.0.0.1 for PROFILE_SECONDS (default 8, after 3 unprofiled seconds of warm-up), and samples the main thread with
 * V8's profiler. Prints the busy time per request by step of the request path (each sample goes to the innermost
 * step on its stack, else to the innermost library or file), the functions with the most own time, and writes the
 * profile to PROFILE_OUT (default /tmp/profile-leads.cpuprofile, for DevTools). PROFILE_LOG=info logs requests as
 * production does (to /dev/null); the default, silent, is what bench:leads measures. Workers are off.
 *
 * PROFILE_HEAP=1 samples allocations instead (V8's sampling heap profiler, every 512 bytes, the collected objects
 * kept): bytes allocated per request, by function and by src/ function with its callees, the profile written to
 * PROFILE_OUT (default /tmp/profile-leads.heapprofile, for DevTools). Unlike CPU time, bytes per request hardly move
 * with the machine's load, so an A/B of a change can be read from one run of each.
 */
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Worker } from 'node:worker_threads';
import { buildApp, loggerOptions } from '../src/http/app.js';
import type { Profile, ProfileNode } from './slice-profiles.js';
import { benchDatabase, benchServices, seededSubmission, seedLeads, unlimitedWorkspace } from './support.js';

const CLIENTS = Number(process.env.PROFILE_CLIENTS ?? 16);
const SECONDS = Number(process.env.PROFILE_SECONDS ?? 8);
const HEAP = process.env.PROFILE_HEAP === '1';
const OUT = process.env.PROFILE_OUT ?? `/tmp/profile-leads.${HEAP ? 'heapprofile' : 'cpuprofile'}`;
const LOG_LEVEL = process.env.PROFILE_LOG ?? 'silent';
/** PROFILE_ROUTE=list profiles GET /v1/leads?limit=100 over PROFILE_LEADS (default 20,000) seeded leads instead. */
const ROUTE = process.env.PROFILE_ROUTE === 'list' ? 'list' : 'create';
const LEADS = Number(process.env.PROFILE_LEADS ?? 20_000);

const LOAD = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { port, headers, clients, ms, phase, route } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
let seq = 0;
let done = 0;
let failed = 0;
function once() {
  seq += 1;
  const n = String(seq).padStart(7, '0');
  const body = JSON.stringify({ full_name: 'Profile Person ' + n, phone: '7' + phase + n,
    email: 'profile-' + phase + '-' + n + '@example.com', city: seq % 2 ? 'Bengaluru' : 'Delhi', visa_type: 'student',
    country_interest: 'CA', intake: '2027-01', utm: { source: 'bench', campaign: 'load' },
    message: 'Benchmark enquiry', consent: true });
  const list = route === 'list';
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method: list ? 'GET' : 'POST',
      path: list ? '/v1/leads?limit=100&updated_since=' + encodeURIComponent(new Date(Date.UTC(2026, 0, 1) + (seq % 5000) * 60000).toISOString()) : '/v1/leads', agent,
      headers: list ? headers : { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.on('data', () => {});
      res.on('end', () => { done += 1; if (res.statusCode !== (list ? 200 : 201)) failed += 1; resolve(); });
    });
    req.on('error', () => { failed += 1; resolve(); });
    req.end(list ? undefined : body);
  });
}
(async () => {
  const end = performance.now() + ms;
  await Promise.all(Array.from({ length: clients }, async () => { while (performance.now() < end) await once(); }));
  agent.destroy();
  parentPort.postMessage({ done, failed });
})();
`;

function load(port: number, headers: Record<string, string>, ms: number, phase: string) {
  return new Promise<{ done: number; failed: number }>((resolve, reject) => {
    const worker = new Worker(LOAD, {
      eval: true,
      workerData: { port, headers, clients: CLIENTS, ms, phase, route: phase === '01' ? 'create' : ROUTE },
    });
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

type Frame = ProfileNode['callFrame'];
const at = (f: Frame, file: string) => f.url.includes(file);

/** Steps of the request path, by the function that runs them; a sample goes to the innermost one on its stack. */
const STEPS: [string, (f: Frame) => boolean][] = [
  // Hooks that call `done` synchronously have the answer's write below them.
  [
    'answer written to the socket (fastify, node)',
    (f) => f.functionName === 'onSendEnd' && at(f, 'fastify/lib/reply.js'),
  ],
  ['body parsing (wire.ts, JSON.parse)', (f) => at(f, 'src/http/wire.ts')],
  ['authentication + rate limits', (f) => f.functionName === 'authenticate' || at(f, 'src/ratelimit/')],
  ['app hooks (onRequest minus auth, onSend)', (f) => at(f, 'src/http/app.ts')],
  ['validation (ajv + edge checks)', (f) => at(f, 'src/http/edge-values.ts') || at(f, 'lib/validation.js')],
  ['SQL transport (src/storage)', (f) => at(f, 'src/storage/')],
  ['error handler', (f) => at(f, 'src/http/errors.ts')],
  ['normalisation + checks (checkLeadCreate)', (f) => f.functionName === 'checkLeadCreate'],
  ['capture command (captureLead)', (f) => f.functionName === 'captureLead' || at(f, 'src/commands/leads/capture')],
  ['submitLead (other)', (f) => f.functionName === 'submitLead'],
  ['metrics (onResponse, prom-client)', (f) => at(f, 'src/http/observability.ts') || at(f, 'prom-client')],
  ['serialisation (fast-json-stringify)', (f) => at(f, 'fast-json-stringify') || /serialize/i.test(f.functionName)],
  ['logging (pino)', (f) => at(f, 'node_modules/pino') || at(f, 'src/http/logging.ts')],
  ['leads route handler (other)', (f) => at(f, 'src/http/routes/leads.ts')],
];

/** Where a sample outside every step goes: by the leaf's file. */
function library(f: Frame): string {
  if (f.functionName.startsWith('(')) return f.functionName;
  if (at(f, 'node_modules/pg')) return 'pg driver (outside the capture)';
  if (at(f, 'node_modules/fastify') || at(f, 'find-my-way') || at(f, 'avvio')) return 'fastify core';
  if (f.url.startsWith('node:') || f.url === '') return 'node core (http, net, streams)';
  if (at(f, 'node_modules/')) return `other library ${f.url.replace(/.*node_modules\/((@[^/]+\/)?[^/]+).*/, '$1')}`;
  return `other ${f.url.replace(/.*\/src\//, 'src/')}`;
}

/** A frame as the reports name it: function, file under src/ or node_modules/, line. */
function frameName(f: Frame): string {
  return `${f.functionName || '(anonymous)'} ${f.url.replace(/.*\/(src|node_modules)\//, '$1/')}:${f.lineNumber}`;
}

/** Prints the 40 largest own amounts, then the 40 largest src/ functions' with their callees, each as `per` formats it. */
function printTops(self: Map<string, number>, total: Map<string, number>, unit: string, per: (n: number) => string) {
  console.log(`\nOwn ${unit === 'B' ? 'allocations' : 'time'}, top 40 (${unit} per request):`);
  for (const [fn, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(`${per(n)}  ${fn}`);
  console.log(`\nWith callees, src/ functions, top 40 (${unit} per request):`);
  const own = [...total].filter(([fn]) => fn.includes(' src/'));
  for (const [fn, n] of own.sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(`${per(n)}  ${fn}`);
}

function attribute(profile: Profile, requests: number): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const steps = new Map<string, number>();
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((sampled, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    const leaf = byId.get(sampled)!.callFrame;
    if (leaf.functionName === '(idle)') return;
    const stack: Frame[] = [];
    for (let id: number | undefined = sampled; id !== undefined; id = parent.get(id))
      stack.push(byId.get(id)!.callFrame);
    // Stopping the profiler itself, not the service.
    if (stack.some((f) => at(f, 'node:inspector'))) return;
    busy += us;
    let step: string | undefined;
    for (const frame of stack) {
      step = STEPS.find(([, matches]) => matches(frame))?.[0];
      if (step) break;
    }
    step ??= stack.map(library).find((l) => !l.startsWith('node core') && !l.startsWith('(')) ?? library(leaf);
    steps.set(step, (steps.get(step) ?? 0) + us);
    self.set(frameName(leaf), (self.get(frameName(leaf)) ?? 0) + us);
    for (const n of new Set(stack.map(frameName))) total.set(n, (total.get(n) ?? 0) + us);
  });
  const per = (us: number) => (us / requests).toFixed(1).padStart(7);
  console.log(`main thread busy per request: ${per(busy)} µs (${requests} requests)\n\nBy step (µs per request):`);
  for (const [step, us] of [...steps].sort((a, b) => b[1] - a[1])) console.log(`${per(us)}  ${step}`);
  printTops(self, total, 'µs', per);
}

interface HeapNode {
  callFrame: Frame;
  selfSize: number;
  children: HeapNode[];
}
interface HeapProfile {
  head: HeapNode;
}

/** Bytes allocated per request, by allocating function and by src/ function with its callees. */
function attributeHeap(profile: HeapProfile, requests: number): void {
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let all = 0;
  const walk = (node: HeapNode, stack: string[]): void => {
    const name = frameName(node.callFrame);
    const here = [...stack, name];
    all += node.selfSize;
    self.set(name, (self.get(name) ?? 0) + node.selfSize);
    for (const n of new Set(here)) total.set(n, (total.get(n) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child, here);
  };
  walk(profile.head, []);
  const per = (b: number) => (b / requests).toFixed(0).padStart(8);
  console.log(`allocated per request: ${per(all)} B (${requests} requests)`);
  printTops(self, total, 'B', per);
}

/** The load under V8's sampling heap profiler (a sample every 512 bytes, objects the GC collected kept). */
async function sampleAllocations(session: Session, run: () => Promise<{ done: number }>): Promise<void> {
  await session.post('HeapProfiler.enable');
  // Options of the DevTools protocol that Node's typings do not list yet.
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 512,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  } as never);
  const result = await run();
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as { profile: HeapProfile };
  writeFileSync(OUT, JSON.stringify(profile));
  console.log(`${ROUTE}, ${CLIENTS} clients, ${SECONDS} s: ${result.done} answers; allocation profile in ${OUT}`);
  attributeHeap(profile, result.done);
}

async function main(): Promise<void> {
  const db = await benchDatabase(20);
  try {
    const services = await benchServices(db, LOG_LEVEL);
    const { key, workspace } = await unlimitedWorkspace(services, 'profile', 'profile');
    // Leads a minute apart from 2026-01-01, so each listing's updated_since starts a full page.
    if (ROUTE === 'list')
      await seedLeads(db.pool, workspace, LEADS, (i) => seededSubmission(i), Date.UTC(2026, 0, 1), 'profile');
    if (ROUTE === 'list') await db.pool.query('VACUUM (ANALYZE) leads, lead_order');
    const logger = LOG_LEVEL === 'silent' ? false : loggerOptions(LOG_LEVEL, createWriteStream('/dev/null'));
    const app = await buildApp(services, { logger });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    const headers = { authorization: `Bearer ${key.value}` };
    await load(port, headers, 3000, '01');

    const session = new Session();
    session.connect();
    if (HEAP) {
      await sampleAllocations(session, () => load(port, headers, SECONDS * 1000, '02'));
      session.disconnect();
      await app.close();
      await services.rateLimits.close();
      return;
    }
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    const cpu0 = process.cpuUsage();
    await session.post('Profiler.start');
    const result = await load(port, headers, SECONDS * 1000, '02');
    const { profile } = (await session.post('Profiler.stop')) as { profile: Profile };
    const cpu = process.cpuUsage(cpu0);
    session.disconnect();
    writeFileSync(OUT, JSON.stringify(profile));
    console.log(
      `${ROUTE}, ${CLIENTS} clients, ${SECONDS} s, log ${LOG_LEVEL}: ${result.done} answers (${result.failed} not ${ROUTE === 'list' ? 200 : 201}), ` +
        `${(result.done / SECONDS).toFixed(0)}/s, process CPU ${((cpu.user + cpu.system) / 1000 / result.done).toFixed(3)} ms per request (load worker included); profile in ${OUT}`,
    );
    attribute(profile, result.done);
    await app.close();
    await services.rateLimits.close();
  } finally {
    await db.close();
  }
}

/** `profile-leads.ts file.cpuprofile requests`: attributes a profile written before, without a run. */
async function reread(file: string, requests: number): Promise<void> {
  attribute(JSON.parse(readFileSync(file, 'utf8')) as Profile, requests);
}

const [file, requests] = process.argv.slice(2);
(file ? reread(file, Number(requests)) : main()).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
