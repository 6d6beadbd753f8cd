/**
 * bench:million (issue 40): one workspace of BENCH_EVENTS events (default 1,000,000) through what an operator runs on
 * it, each through the real CLI (dist/src/cli/main.js, built by `npx tsc -p tsconfig.build.json`):
 *
 *   export --gzip to a file         wall time < 5 min, peak RSS
 *   import into a fresh database    wall time < 5 min, peak RSS
 *   audit verify                    wall time < 2 min
 *   read-models rebuild             wall time < 5 min, progress shown
 *
 * and the export's and import's peak RSS at BENCH_EVENTS within 1.2 × the same at BENCH_SMALL_EVENTS (default
 * 100,000), run first. The events are the service's own: written through the event store's transactions (hash
 * chains, sealed personal data with their data keys, inline projections), never through the import path. The
 * seeding's PostgreSQL CPU counts every PostgreSQL process of the machine. Without DATABASE_URL each of the four
 * databases (a source and an import target per size) is on an embedded server of its own.
 * Usage: `npm run bench:million`; BENCH_EVENTS, BENCH_SMALL_EVENTS, BENCH_SEED_WORKERS (default 4); BENCH_CLI (the
 * CLI's main.js, default dist's: another build measured on the same seeding); BENCH_CPU_PROF (a directory: each CLI
 * run writes a V8 CPU profile there, `--cpu-prof`).
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
import type { EventStore, StoreTransaction } from '../src/events/event-store.js';
import type { CommandContext, EventMetadata } from '../src/events/types.js';
import { leadWriteGate } from '../src/intake/sync-gate.js';
import { newId } from '../src/shared/ids.js';
import type { Workspace } from '../src/workspaces/workspace.js';
import { benchDatabase, benchServices, seededSubmission, unlimitedWorkspace, withCpuCost } from './support.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const SMALL_EVENTS = Number(process.env.BENCH_SMALL_EVENTS ?? 100_000);
const SEED_WORKERS = Number(process.env.BENCH_SEED_WORKERS ?? 4);
const LEADS_PER_BATCH = 200;
const CLI = path.resolve(process.env.BENCH_CLI ?? path.join(import.meta.dirname, '../dist/src/cli/main.js'));
const CPU_PROF = process.env.BENCH_CPU_PROF
  ? ['--cpu-prof', '--cpu-prof-dir', path.resolve(process.env.BENCH_CPU_PROF)]
  : [];

const GOAL = { exportSeconds: 300, importSeconds: 300, verifySeconds: 120, rebuildSeconds: 300, rssRatio: 1.2 };

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
async function runCli(databaseUrl: string, encryptionKey: string, dir: string, args: string[]): Promise<CliRun> {
  const preload = path.join(dir, 'peak-rss.mjs');
  const rssFile = path.join(dir, 'peak-rss.txt');
  fs.writeFileSync(preload, PEAK_RSS_PRELOAD);
  fs.rmSync(rssFile, { force: true });
  const started = performance.now();
  const child = spawn(process.execPath, [...CPU_PROF, '--import', preload, CLI, '--json', ...args], {
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

      const rebuildRun = await runCli(source.url, key, dir, ['read-models', 'rebuild']);
      expectEqual('rebuilt events', (JSON.parse(rebuildRun.stdout) as { events: number }).events, seeded);
      record(
        `${label} read-models rebuild`,
        secondsText(rebuildRun.seconds),
        `< ${GOAL.rebuildSeconds} s`,
        rebuildRun.seconds < GOAL.rebuildSeconds,
      );
      // The CLI runs on pipes here: a bar drawn only on a terminal would not show, progress lines would.
      record(
        `${label} rebuild progress`,
        `${rebuildRun.progressLines} lines`,
        'progress shown',
        rebuildRun.progressLines > 0,
        rebuildRun.progressLines > 0 ? '' : '   (finding: it writes nothing until it ends)',
      );
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
