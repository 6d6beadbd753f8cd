/**
 * bench:million: one workspace of BENCH_EVENTS events (default 1,000,000) through what an operator runs on
 * it, each through the real CLI (dist/cli/visa-crm.mjs, what bin/visa-crm.js runs; built by `npm run build`):
 *
 *   export --gzip to a file         wall time < 5 min, peak RSS
 *   import into a fresh database    wall time < 5 min, peak RSS
 *   audit verify                    wall time < 2 min
 *   read-models rebuild             wall time < 2 min, progress shown
 *
 * and the export's and import's peak RSS at BENCH_EVENTS within 1.2 × the same at BENCH_SMALL_EVENTS (default
 * 100,000), run first. Then, on the same large workspace (after the rebuild, so no CLI figure shares the machine with
 * it), the real app on 127.0.0.1 answers one client, one request at a time, for BENCH_PAGE_SECONDS (default 10) each
 * after a short warm-up, every answer checked to be a 200:
 *
 *   the console's lead list, first page, as a signed-in owner   p99 < 100 ms
 *   the console's lead search, by name or email (10 leads each)  p99 < 100 ms
 *   a lead's page in the console, with its follow-up history     p99 < 100 ms
 *   GET /v1/leads?limit=100 with a secret key (leads:read)       p99 < 15 ms
 *
 * The events are the service's own: written through the event store's transactions (hash chains, sealed personal
 * data with their data keys, inline projections), never through the import path. The seeding's PostgreSQL CPU counts
 * every PostgreSQL process of the machine. Without DATABASE_URL each of the four databases (a source and an import
 * target per size) is on an embedded server of its own.
 * Usage: `npm run bench:million`; BENCH_EVENTS, BENCH_SMALL_EVENTS, BENCH_SEED_WORKERS (default 4),
 * BENCH_PAGE_SECONDS (default 10); BENCH_CLI (the CLI's entry, default dist/cli/visa-crm.mjs: another build
 * measured on the same seeding); BENCH_BASELINE_CLI (another build's CLI, e.g. main's: its import and rebuild run
 * beside this build's on the same seeding, printed as the baseline); BENCH_CPU_PROF (a directory: each CLI run writes a V8 CPU profile there, `--cpu-prof`).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nextApplicationNumber } from '../src/commands/applications/application-numbers.js';
import { applicationStream, caseRef, decideOpen } from '../src/domain/applications/index.js';
import { decideCapture, decideConversion, decideUpdate, type LeadPatch } from '../src/domain/leads/decide.js';
import { evolve } from '../src/domain/leads/evolve.js';
import { leadStream, type Lead } from '../src/domain/leads/lead.js';
import { decideCreate, taskStream } from '../src/domain/tasks/index.js';
import type { AppServices } from '../src/bootstrap.js';
import type { EventStore, StoreTransaction } from '../src/events/event-store.js';
import type { CommandContext, EventMetadata } from '../src/events/types.js';
import { buildApp } from '../src/http/app.js';
import { leadWriteGate } from '../src/intake/sync-gate.js';
import { recordDueFollowUps } from '../src/notifications/record.js';
import { createKey } from '../src/keys/repository.js';
import { newId } from '../src/shared/ids.js';
import type { Workspace } from '../src/workspaces/workspace.js';
import {
  benchDatabase,
  benchServices,
  consoleCookie,
  consoleOwner,
  measure,
  printHotShare,
  printIndexUse,
  resetStatistics,
  seededPerson,
  seededSubmission,
  unlimitedWorkspace,
  withCpuCost,
  WRITTEN_TABLES,
} from './support.js';

type BenchDatabase = Awaited<ReturnType<typeof benchDatabase>>;

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const SMALL_EVENTS = Number(process.env.BENCH_SMALL_EVENTS ?? 100_000);
const SEED_WORKERS = Number(process.env.BENCH_SEED_WORKERS ?? 4);
const LEADS_PER_BATCH = 200;
const CLI = path.resolve(process.env.BENCH_CLI ?? path.join(import.meta.dirname, '../dist/cli/visa-crm.mjs'));
/** Another build's CLI (e.g. main's dist/cli/visa-crm.mjs): its import and rebuild run beside this one's, same seeding. */
const BASELINE_CLI = process.env.BENCH_BASELINE_CLI ? path.resolve(process.env.BENCH_BASELINE_CLI) : undefined;
const CPU_PROF = process.env.BENCH_CPU_PROF
  ? ['--cpu-prof', '--cpu-prof-dir', path.resolve(process.env.BENCH_CPU_PROF)]
  : [];

const PAGE_SECONDS = Number(process.env.BENCH_PAGE_SECONDS ?? 10);
const WARM_UP_REQUESTS = 50;
const WARM_UP_SECONDS = 2;
const SEARCHES = 16;
const LEAD_PAGES = 8;
const PASSWORD = 'a bench:million password of some length';

const GOAL = {
  exportSeconds: 300,
  importSeconds: 300,
  verifySeconds: 120,
  rebuildSeconds: 120,
  rssRatio: 1.2,
  consolePageP99Ms: 100,
  apiPageP99Ms: 15,
};

// Each lead: lead.created, then lead.updated and lead.note_added; one in TASK_EVERY gets a task (task.created), one
// in CONVERT_EVERY is converted (lead.converted, application.opened, application.stage_changed).
const TASK_EVERY = 10;
const CONVERT_EVERY = 20;
const EVENTS_PER_LEAD = 3 + 1 / TASK_EVERY + 3 / CONVERT_EVERY;
const FOLLOW_UP: LeadPatch = { stage_key: 'contacted', temperature: 'warm', note: 'Called back; sends documents soon' };
const API = { key: 'api', name: 'API' };
const DAY_MS = 24 * 3600 * 1000;

function ownerOf(workspace: Workspace) {
  const owner = workspace.settings.users.find((u) => u.role === 'owner')!;
  return { user_id: owner.id, email: owner.email, name: owner.name };
}

function contextAt(workspace: Workspace, metadata: EventMetadata, now: Date): CommandContext {
  return { tenantId: workspace.id, sandbox: false, metadata, now };
}

/** Leads `first` … `first + count - 1`, captured as new leads in one transaction of the event store. */
async function createLeads(
  store: EventStore,
  workspace: Workspace,
  first: number,
  count: number,
  at: Date,
): Promise<Lead[]> {
  const metadata = { actor: { type: 'system' as const, name: 'bench:million' }, correlation_id: newId() };
  const work = async (tx: StoreTransaction) => {
    const leads: Lead[] = [];
    for (let i = first; i < first + count; i++) {
      const decision = decideCapture({
        leadId: newId(at.getTime()),
        submission: seededSubmission(i, i % 4 ? null : 'Looking for a September intake'),
        existing: null,
        source: API,
        consentSource: API.key,
        settings: workspace.settings,
        now: at,
      });
      await tx.append(leadStream(decision.lead.id), 'no_stream', decision.events);
      leads.push(decision.lead);
    }
    return leads;
  };
  // Every lead write holds the lead-sync gate shared, as runLeadWrite takes it.
  return store.transact(contextAt(workspace, metadata, at), [], work, {
    opening: leadWriteGate(workspace.id, false),
  });
}

/**
 * A staff member's follow-up on each lead (a PATCH's events), a task on some and a conversion of others, in one
 * transaction naming every lead stream. Returns the number of events appended.
 */
async function workOnLeads(
  store: EventStore,
  workspace: Workspace,
  leads: Lead[],
  first: number,
  at: Date,
): Promise<number> {
  const owner = ownerOf(workspace);
  const metadata = { actor: { type: 'user' as const, ...owner }, correlation_id: newId() };
  const work = async (tx: StoreTransaction) => {
    const converting: { lead: Lead; revision: number }[] = [];
    for (const [j, lead] of leads.entries()) {
      const events = decideUpdate({
        lead,
        patch: FOLLOW_UP,
        settings: workspace.settings,
        author: metadata.actor,
        now: at,
      });
      await tx.append(leadStream(lead.id), 0, events);
      if ((first + j) % TASK_EVERY === 0) {
        const taskId = newId(at.getTime());
        const task = decideCreate({
          task_id: taskId,
          subject: { lead_id: lead.id, application_id: null },
          title: 'Collect the passport scan',
          assignee: owner,
          due_at: new Date(at.getTime() + 7 * DAY_MS),
          now: at,
          person_id: lead.id,
        });
        await tx.append(taskStream(taskId), 'no_stream', task);
      }
      const updated = events.reduce<Lead>((l, e) => evolve(l, e) ?? l, lead);
      if ((first + j) % CONVERT_EVERY === 0) converting.push({ lead: updated, revision: events.length });
    }
    // Conversions last: the case-number counter's row stays locked until COMMIT, and other workers wait for it.
    const workflow = workspace.settings.application_workflow;
    for (const { lead, revision } of converting) {
      const id = newId(at.getTime());
      const number = await nextApplicationNumber(tx.sql, workspace.id, false);
      await tx.append(leadStream(lead.id), revision, decideConversion(lead, { id, case_ref: caseRef(number) }, at));
      await tx.append(
        applicationStream(id),
        'no_stream',
        decideOpen({ application_id: id, lead_id: lead.id, number, workflow, now: at }),
      );
    }
    return tx.appended.length;
  };
  const streams = leads.map((l) => leadStream(l.id));
  return store.transact(contextAt(workspace, metadata, at), streams, work, {
    opening: leadWriteGate(workspace.id, false),
  });
}

/**
 * Seeds about `events` events into the workspace: batches of leads, each created in one transaction and worked on in
 * a second, half a batch's step of the last 30 days later; SEED_WORKERS batches at a time.
 */
async function seedWorkspace(store: EventStore, workspace: Workspace, events: number): Promise<number> {
  const leads = Math.max(1, Math.round(events / EVENTS_PER_LEAD));
  const batches = Math.ceil(leads / LEADS_PER_BATCH);
  const start = Date.now() - 30 * DAY_MS;
  const step = (30 * DAY_MS) / batches;
  const started = performance.now();
  let next = 0;
  let written = 0;
  let reported = started;
  const report = () => {
    const seconds = (performance.now() - started) / 1000;
    console.error(`  seeded ${written.toLocaleString()} events (${(written / seconds).toFixed(0)}/s)`);
  };
  await Promise.all(
    Array.from({ length: SEED_WORKERS }, async () => {
      while (next < batches) {
        const batch = next++;
        const first = batch * LEADS_PER_BATCH;
        const at = start + batch * step;
        const created = await createLeads(
          store,
          workspace,
          first,
          Math.min(LEADS_PER_BATCH, leads - first),
          new Date(at),
        );
        // Read after the await: `written += await …` would add to the value from before another worker's batch.
        const worked = await workOnLeads(store, workspace, created, first, new Date(at + step / 2));
        written += created.length + worked;
        if (performance.now() - reported > 10_000) {
          reported = performance.now();
          report();
        }
      }
    }),
  );
  report();
  return written;
}

interface CliRun {
  seconds: number;
  peakRssMiB: number;
  /** What the command wrote to stdout (with --json: one document). */
  stdout: string;
  /** Lines it wrote to stderr before it ended: a progress bar or progress lines, if it shows any. */
  progressLines: number;
}

/**
 * Reports the process's peak RSS when it exits. getrusage's maxRSS is the kernel's own high-water mark, read at the
 * last moment, so a peak at the very end (an export's stream heads) is not missed as a poll of /proc could miss it,
 * and it needs nothing beside Node (GNU time, which reports the same figure, is not on every machine).
 */
const PEAK_RSS_PRELOAD = `import { writeFileSync } from 'node:fs';
process.on('exit', () => writeFileSync(process.env.BENCH_PEAK_RSS_FILE, String(process.resourceUsage().maxRSS)));
`;

/** Runs `visa-crm <args> --json` on a database with the project's Node; fails on a non-zero exit. */
async function runCli(
  databaseUrl: string,
  encryptionKey: string,
  dir: string,
  args: string[],
  cli = CLI,
): Promise<CliRun> {
  const preload = path.join(dir, 'peak-rss.mjs');
  const rssFile = path.join(dir, 'peak-rss.txt');
  fs.writeFileSync(preload, PEAK_RSS_PRELOAD);
  fs.rmSync(rssFile, { force: true });
  const started = performance.now();
  const child = spawn(process.execPath, [...CPU_PROF, '--import', preload, cli, '--json', ...args], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      SECRET_ENCRYPTION_KEY: encryptionKey,
      LOG_LEVEL: 'silent',
      BENCH_PEAK_RSS_FILE: rssFile,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (c) => resolve(c ?? 1));
  });
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`visa-crm ${args.join(' ')} exited with ${code}: ${stderr}`);
  const peakRssMiB = Number(fs.readFileSync(rssFile, 'utf8')) / 1024;
  return { seconds, peakRssMiB, stdout, progressLines: stderr.split(/[\r\n]/).filter((l) => l.trim()).length };
}

interface Figure {
  name: string;
  value: string;
  goal: string;
  met: boolean;
}

const figures: Figure[] = [];

/** Prints a step's figure beside its goal, and keeps it for the summary. */
function record(name: string, value: string, goal: string, met: boolean, extra = ''): void {
  figures.push({ name, value, goal, met });
  console.log(`${name.padEnd(44)} ${value.padStart(12)}   goal ${goal}: ${met ? 'met' : 'missed'}${extra}`);
}

const secondsText = (s: number) => `${s.toFixed(1)} s`;
const mibText = (m: number) => `${m.toFixed(0)} MiB`;
const msText = (ms: number) => `${ms.toFixed(2)} ms`;

interface SizeRun {
  events: number;
  exportRun: CliRun;
  importRun: CliRun;
}

/**
 * One size: a fresh database seeded with one workspace of about `events` events, exported to a gzip file and
 * imported into a second fresh database; with `operate`, then audit verify and read-models rebuild on the first.
 */
async function runSize(label: string, events: number, operate: boolean): Promise<SizeRun> {
  const source = await benchDatabase(2 * SEED_WORKERS);
  const target = await benchDatabase(2);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vcrm-million-'));
  const services = await benchServices(source);
  try {
    const key = services.config.secretEncryptionKey!;
    const { workspace } = await unlimitedWorkspace(services, 'million', 'bench:million');
    console.log(`\n${label}: seeding ${workspace.slug} with about ${events.toLocaleString()} events (${source.where})`);
    const seedStart = performance.now();
    const { seeded, cpu } = await withCpuCost(
      async () => ({ seeded: await seedWorkspace(services.store, workspace, events) }),
      (r) => r.seeded,
    );
    const seedSeconds = (performance.now() - seedStart) / 1000;
    const pgCpu = cpu.postgres === null ? 'n/a' : `${cpu.postgres.toFixed(3)} ms`;
    console.log(
      `${label}: seeded ${seeded.toLocaleString()} events in ${secondsText(seedSeconds)} (${(seeded / seedSeconds).toFixed(0)} events/s; CPU per event: Node ${cpu.node.toFixed(3)} ms, PostgreSQL ${pgCpu})`,
    );
    await printHotShare(`${label} seeding (live writes)`, source.pool, WRITTEN_TABLES);
    // What autovacuum would have done to a month-old log: the export reads it as it reads a settled workspace.
    await source.pool.query('VACUUM (ANALYZE)');

    const file = path.join(dir, `${workspace.slug}.ndjson.gz`);
    const exportRun = await runCli(source.url, key, dir, ['export', workspace.slug, '--gzip', '--out', file]);
    const exported = JSON.parse(exportRun.stdout) as { events: number; anchor: string };
    expectEqual('exported events', exported.events, seeded);
    const size = `${(fs.statSync(file).size / 2 ** 20).toFixed(0)} MiB gzip`;
    record(
      `${label} export`,
      secondsText(exportRun.seconds),
      `< ${GOAL.exportSeconds} s`,
      exportRun.seconds < GOAL.exportSeconds,
      `   peak RSS ${mibText(exportRun.peakRssMiB)}, ${size}`,
    );

    const importRun = await runCli(target.url, key, dir, ['import', file]);
    const imported = JSON.parse(importRun.stdout) as { events: number; anchor: string };
    expectEqual('imported events', imported.events, seeded);
    expectEqual('imported head', imported.anchor, exported.anchor);
    record(
      `${label} import`,
      secondsText(importRun.seconds),
      `< ${GOAL.importSeconds} s`,
      importRun.seconds < GOAL.importSeconds,
      `   peak RSS ${mibText(importRun.peakRssMiB)}`,
    );
    await printHotShare(`${label} import`, target.pool, WRITTEN_TABLES);
    if (BASELINE_CLI) {
      const baseline = await benchDatabase(2);
      try {
        const run = await runCli(baseline.url, key, dir, ['import', file], BASELINE_CLI);
        record(
          `${label} import, baseline build`,
          secondsText(run.seconds),
          `< ${GOAL.importSeconds} s`,
          run.seconds < GOAL.importSeconds,
          `   peak RSS ${mibText(run.peakRssMiB)}`,
        );
        await printHotShare(`${label} import, baseline build`, baseline.pool, WRITTEN_TABLES);
      } finally {
        await baseline.close();
      }
    }

    if (operate) {
      const verifyRun = await runCli(source.url, key, dir, ['audit', 'verify', workspace.slug]);
      const [verified] = JSON.parse(verifyRun.stdout) as { events: number; broken: unknown; anchor: string }[];
      if (verified?.broken !== null) throw new Error(`audit verify found a broken chain: ${verifyRun.stdout}`);
      expectEqual('verified head', verified.anchor, exported.anchor);
      record(
        `${label} audit verify`,
        secondsText(verifyRun.seconds),
        `< ${GOAL.verifySeconds} s`,
        verifyRun.seconds < GOAL.verifySeconds,
      );

      if (BASELINE_CLI) {
        await resetStatistics(source.pool);
        const run = await runCli(source.url, key, dir, ['read-models', 'rebuild'], BASELINE_CLI);
        record(
          `${label} read-models rebuild, baseline build`,
          secondsText(run.seconds),
          `< ${GOAL.rebuildSeconds} s`,
          run.seconds < GOAL.rebuildSeconds,
          `   peak RSS ${mibText(run.peakRssMiB)}`,
        );
        await printHotShare(`${label} rebuild, baseline build`, source.pool, WRITTEN_TABLES);
      }
      await resetStatistics(source.pool);
      const rebuildRun = await runCli(source.url, key, dir, ['read-models', 'rebuild']);
      expectEqual('rebuilt events', (JSON.parse(rebuildRun.stdout) as { events: number }).events, seeded);
      record(
        `${label} read-models rebuild`,
        secondsText(rebuildRun.seconds),
        `< ${GOAL.rebuildSeconds} s`,
        rebuildRun.seconds < GOAL.rebuildSeconds,
        `   peak RSS ${mibText(rebuildRun.peakRssMiB)}`,
      );
      await printHotShare(`${label} rebuild`, source.pool, WRITTEN_TABLES);
      // The CLI runs on pipes here: a bar drawn only on a terminal would not show, progress lines would.
      record(
        `${label} rebuild progress`,
        `${rebuildRun.progressLines} lines`,
        'progress shown',
        rebuildRun.progressLines > 0,
        rebuildRun.progressLines > 0 ? '' : '   (finding: it writes nothing until it ends)',
      );
      await timePages(label, services, source, workspace);
    }
    return { events: seeded, exportRun, importRun };
  } finally {
    await services.rateLimits.close();
    await services.keys.close();
    fs.rmSync(dir, { recursive: true, force: true });
    await target.close();
    await source.close();
  }
}

/** A GET over loopback at the bench's one client: the body of a 200, else a loud failure (no error page is timed). */
async function fetchOk(url: string, headers: Record<string, string>): Promise<string> {
  const response = await fetch(url, { headers });
  const body = await response.text();
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${body.slice(0, 300)}`);
  return body;
}

/**
 * How many leads a console list page shows: its count line ("about 31,000 leads (an estimate …); 50 on this page",
 * "1 lead; 1 on this page", "0 leads").
 */
function leadsShown(page: string): number {
  const line = /class="count" role="status">\s*([^<]*)/.exec(page)?.[1];
  if (line === undefined || !/\bleads?\b/.test(line))
    throw new Error('a console lead list page without its count line');
  return Number(/(\d+) on this page/.exec(line)?.[1] ?? 0);
}

/**
 * Searches that each match ten seeded leads, spread over the workspace, half by name and half by email: eight of a
 * seeded number's nine digits after `Person ` or `seed-` are the leads i … i + 9 (seededPerson), all below `leads`.
 */
function searchQueries(leads: number): string[] {
  const tens = Math.max(1, Math.floor(leads / 10));
  return Array.from({ length: SEARCHES }, (_, j) => {
    const digits = String(10 * Math.floor(((j + 0.5) / SEARCHES) * tens))
      .padStart(9, '0')
      .slice(0, 8);
    return j % 2 ? `seed-${digits}` : `Person ${digits}`;
  });
}

/**
 * Leads spread over the workspace, by their seeded email: each has the follow-up (a stage change and a note); by its
 * number's remainder (workOnLeads) one of four also has a task and a conversion, one a task alone.
 */
async function leadsWithHistory(source: BenchDatabase, workspace: Workspace, leads: number): Promise<string[]> {
  const spread = Array.from(
    { length: LEAD_PAGES },
    (_, k) => CONVERT_EVERY * Math.floor((k * leads) / LEAD_PAGES / CONVERT_EVERY) + [0, TASK_EVERY, 1, 3][k % 4]!,
  );
  const numbers = [...new Set(spread.filter((i) => i < leads))];
  const { rows } = await source.pool.query<{ id: string }>(
    'SELECT id FROM leads WHERE tenant_id = $1 AND sandbox = false AND email = ANY($2::text[])',
    [workspace.id, numbers.map((i) => seededPerson(i).email)],
  );
  expectEqual('leads found for the lead pages', rows.length, numbers.length);
  return rows.map((r) => r.id);
}

interface PageRun {
  name: string;
  goalMs: number;
  /** Asked for in turn, one request at a time. */
  paths: string[];
  headers: Record<string, string>;
  /** Beside the figure: what the pages held (checked once before the timing). */
  note: string;
}

/** One page's figure: a short warm-up, then BENCH_PAGE_SECONDS of requests one after another; p99 against the goal. */
async function timePage(label: string, origin: string, run: PageRun): Promise<void> {
  const ask = (i: number) => fetchOk(origin + run.paths[i % run.paths.length]!, run.headers);
  await measure(WARM_UP_REQUESTS, 1, WARM_UP_SECONDS, ask);
  const timed = await measure(Number.MAX_SAFE_INTEGER, 1, PAGE_SECONDS, ask);
  record(
    `${label} ${run.name} p99`,
    msText(timed.p99),
    `< ${run.goalMs} ms`,
    timed.p99 < run.goalMs,
    `   p50 ${msText(timed.p50)}, ${timed.ops.toLocaleString()} requests${run.note}`,
  );
}

/**
 * The pages people read at this size, from the real app on the source database: the console's lead list,
 * a search and a lead's page as a signed-in owner, and GET /v1/leads?limit=100 with a secret key. Each page is checked
 * once for what it should hold, then timed at one client.
 */
async function timePages(
  label: string,
  services: AppServices,
  source: BenchDatabase,
  workspace: Workspace,
): Promise<void> {
  // The rebuild just truncated and refilled every read model, and this machine's PostgreSQL runs with autovacuum off:
  // without this the pages would read rows with no hint bits or visibility map, planned from the emptied tables'
  // statistics, which is not what a served workspace looks like once autovacuum has passed.
  await source.pool.query('VACUUM (ANALYZE)');
  await resetStatistics(source.pool);
  const { owner } = await consoleOwner(source.pool, workspace, PASSWORD);
  const reader = await createKey(source.pool, {
    tenantId: workspace.id,
    name: 'bench:million reader',
    kind: 'secret',
    mode: 'live',
    scopes: ['leads:read'],
  });
  const leads = Number(
    (
      await source.pool.query<{ n: string }>(
        'SELECT count(*) AS n FROM leads WHERE tenant_id = $1 AND sandbox = false',
        [workspace.id],
      )
    ).rows[0]!.n,
  );
  const app = await buildApp(services, { logger: false });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const origin = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    const signedIn = { cookie: await consoleCookie(origin, owner.email, PASSWORD) };
    const api = { authorization: `Bearer ${reader.value}` };
    const list = `/console/w/${workspace.slug}/leads`;

    const firstPage = leadsShown(await fetchOk(origin + list, signedIn));
    const searches = searchQueries(leads).map((q) => `${list}?${new URLSearchParams({ q }).toString()}`);
    const found: number[] = [];
    for (const p of searches) found.push(leadsShown(await fetchOk(origin + p, signedIn)));
    if (found.some((n) => n === 0)) throw new Error(`a search found no lead: ${searches[found.indexOf(0)]}`);
    const leadPages = (await leadsWithHistory(source, workspace, leads)).map((id) => `${list}/${id}`);
    for (const p of leadPages)
      if (!(await fetchOk(origin + p, signedIn)).includes(FOLLOW_UP.note!))
        throw new Error(`${p} does not show the seeded follow-up note`);
    const apiPage = JSON.parse(await fetchOk(`${origin}/v1/leads?limit=100`, api)) as { data: unknown[] };
    expectEqual('leads on the API page', apiPage.data.length, Math.min(100, leads));

    console.log(`${label}: pages over ${leads.toLocaleString()} leads, one request at a time, ${PAGE_SECONDS} s each`);
    const goal = GOAL.consolePageP99Ms;
    const runs: PageRun[] = [
      { name: 'console lead list', goalMs: goal, paths: [list], headers: signedIn, note: `, ${firstPage} rows` },
      {
        name: 'console lead search',
        goalMs: goal,
        paths: searches,
        headers: signedIn,
        note: `, ${searches.length} queries by name or email, ${Math.min(...found)}–${Math.max(...found)} rows a page`,
      },
      {
        name: "console lead's page",
        goalMs: goal,
        paths: leadPages,
        headers: signedIn,
        note: `, ${leadPages.length} leads`,
      },
      {
        name: 'GET /v1/leads?limit=100',
        goalMs: GOAL.apiPageP99Ms,
        paths: ['/v1/leads?limit=100'],
        headers: api,
        note: '',
      },
    ];
    for (const run of runs) await timePage(label, origin, run);
    // Each of the console list's filters once (not timed), so that the index use printed next covers them too.
    const branch = workspace.settings.branches[0]!.id;
    const day = new Date(Date.now() - 10 * DAY_MS).toISOString().slice(0, 10);
    for (const filter of [
      'stage=contacted',
      'visa_type=student',
      'source=api',
      'owner=none',
      `owner=${owner.id}`,
      `branch=${branch}`,
      `created_from=${day}`,
      `updated_from=${day}`,
    ])
      await fetchOk(`${origin}${list}?${filter}`, signedIn);
    // The other readers of the leads tables, once each: the board (plain and filtered), Today, the header's search,
    // the API's next page and the scan for follow-ups falling due.
    const home = `/console/w/${workspace.slug}`;
    for (const p of [`${list}/board`, `${list}/board?branch=${branch}`, home, `${home}/search?q=Person`])
      await fetchOk(origin + p, signedIn);
    const cursor = (JSON.parse(await fetchOk(`${origin}/v1/leads?limit=100`, api)) as { next_cursor: string | null })
      .next_cursor;
    if (cursor) await fetchOk(`${origin}/v1/leads?limit=100&cursor=${encodeURIComponent(cursor)}`, api);
    await recordDueFollowUps(source.pool, new Date());
    // Which indexes the pages and the filters read.
    for (const table of ['leads', 'lead_order', 'applications'])
      await printIndexUse(`${label} pages and console filters`, source.pool, table);
  } finally {
    await app.close();
  }
}

function expectEqual<T>(what: string, actual: T, expected: T): void {
  if (actual !== expected) throw new Error(`${what}: ${String(actual)}, expected ${String(expected)}`);
}

function recordRssRatio(step: 'export' | 'import', large: CliRun, small: CliRun): void {
  const ratio = large.peakRssMiB / small.peakRssMiB;
  record(
    `${step} peak RSS, large / small`,
    ratio.toFixed(2),
    `≤ ${GOAL.rssRatio}`,
    ratio <= GOAL.rssRatio,
    `   (${mibText(large.peakRssMiB)} / ${mibText(small.peakRssMiB)})`,
  );
}

async function main(): Promise<void> {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: build it with npx tsc -p tsconfig.build.json`);
  console.log(
    `bench:million — BENCH_EVENTS ${EVENTS.toLocaleString()}, BENCH_SMALL_EVENTS ${SMALL_EVENTS.toLocaleString()}, Node ${process.version}`,
  );
  const small = await runSize('small', SMALL_EVENTS, false);
  const large = await runSize('large', EVENTS, true);
  console.log('');
  recordRssRatio('export', large.exportRun, small.exportRun);
  recordRssRatio('import', large.importRun, small.importRun);

  console.log(`\nsummary (large ${large.events.toLocaleString()} events, small ${small.events.toLocaleString()})`);
  for (const f of figures)
    console.log(
      `  ${f.name.padEnd(44)} ${f.value.padStart(12)}   goal ${f.goal.padEnd(16)} ${f.met ? 'met' : 'missed'}`,
    );
}

await main();
