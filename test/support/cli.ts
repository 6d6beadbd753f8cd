import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { TEST_ENCRYPTION_KEY } from './app.js';
import { TYPESCRIPT_ARGS } from './typescript.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * What the tool reads on standard input: nothing (closed), bytes written to it, or another process's output
 * (`spawnCli(...).stdout`: the two processes are joined by a real pipe, as a shell's `|` joins them).
 */
export type CliInput = 'none' | Buffer | Readable;

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * The arguments that start the real command-line tool after `node`: the build the test command made before the
 * suites (VISA_CRM_TEST_CLI, set by scripts/run-tests.mjs: dist/cli/visa-crm.mjs, what bin/visa-crm.js runs), else
 * the source with its types stripped. The build starts in a third of the CPU (linked, scripts/bundle-cli.mjs), which
 * the suites' few hundred invocations add up.
 */
export function cliArgs(): string[] {
  const built = process.env.VISA_CRM_TEST_CLI;
  return built ? [path.resolve(ROOT, built)] : [...TYPESCRIPT_ARGS, path.join(ROOT, 'src/cli/main.ts')];
}

/**
 * The environment a started tool inherits from this suite, without the hooks tap puts in NODE_OPTIONS for its own
 * processes (recording each module a process loads): the tool is the program under test, not a suite, and the
 * hooks cost each of its starts a tenth of a second.
 */
export function toolEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const options = (base.NODE_OPTIONS ?? '').split(/\s+/).filter((o) => o && !o.includes('@tapjs/'));
  return { ...base, NODE_OPTIONS: [...options, reportOptions()].join(' ') };
}

/** Starts the real command-line tool (built, or from source; see cliArgs) against the given database. */
export function spawnCli(
  databaseUrl: string,
  args: string[],
  env: Record<string, string> = {},
  input: CliInput = 'none',
): ChildProcess & { stdout: Readable; stderr: Readable } {
  const child = spawn(process.execPath, [...cliArgs(), ...args], {
    env: {
      ...toolEnv(),
      DATABASE_URL: databaseUrl,
      SECRET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      LOG_LEVEL: 'silent',
      ...env,
    },
    stdio: [input === 'none' ? 'ignore' : Buffer.isBuffer(input) ? 'pipe' : input, 'pipe', 'pipe'],
  });
  if (Buffer.isBuffer(input)) child.stdin!.end(input);
  return child as ChildProcess & { stdout: Readable; stderr: Readable };
}

/**
 * `visa-crm <first> | visa-crm <second>` through a real shell pipe, each side on its own database. Returns what the
 * second wrote and the exit codes of both.
 */
export async function pipeCli(
  first: { databaseUrl: string; args: string[] },
  second: { databaseUrl: string; args: string[] },
): Promise<CliResult & { firstCode: number }> {
  const quote = (arg: string) => `'${arg.replaceAll("'", `'\\''`)}'`;
  const cli = [process.execPath, ...cliArgs()].map(quote).join(' ');
  const script = [
    `{ DATABASE_URL="$FIRST_URL" ${cli} ${first.args.map(quote).join(' ')}; echo $? > "$FIRST_CODE"; }`,
    `DATABASE_URL="$SECOND_URL" ${cli} ${second.args.map(quote).join(' ')}`,
  ].join(' | ');
  const codeFile = path.join(os.tmpdir(), `vcrm-pipe-${process.pid}-${Date.now()}-${Math.random()}`);
  const child = spawn('sh', ['-c', script], {
    env: {
      ...toolEnv(),
      FIRST_URL: first.databaseUrl,
      SECOND_URL: second.databaseUrl,
      FIRST_CODE: codeFile,
      SECRET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      LOG_LEVEL: 'silent',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const result = await collect(child as ChildProcess & { stdout: Readable; stderr: Readable });
  const firstCode = Number(fs.readFileSync(codeFile, 'utf8').trim());
  fs.rmSync(codeFile, { force: true });
  return { ...result, firstCode };
}

/** Runs the real command-line tool against the given database and collects what it wrote. */
export function runCli(
  databaseUrl: string,
  args: string[],
  env: Record<string, string> = {},
  input: CliInput = 'none',
): Promise<CliResult> {
  return collect(spawnCli(databaseUrl, args, env, input));
}

/**
 * How long one run of the tool may take before it is reported as hung: far beyond any run's time on a loaded CI
 * machine (a few seconds), and well inside tap's 180 s for a file, so a hang names its command instead of timing the
 * whole file out.
 */
const RUN_DEADLINE_MS = 120_000;

/** The signal a started tool writes a Node diagnostic report on (its stacks and open handles): see hungRunReport. */
const REPORT_SIGNAL = 'SIGUSR2';
const REPORT_DIR = os.tmpdir();

/** The options that let a hung tool be asked what it is waiting on, added to the tool's NODE_OPTIONS. */
function reportOptions(): string {
  return `--report-on-signal --report-signal=${REPORT_SIGNAL} --report-directory=${REPORT_DIR} --report-exclude-env`;
}

export function collect(
  child: ChildProcess & { stdout: Readable; stderr: Readable },
  deadlineMs = RUN_DEADLINE_MS,
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    let hung = false;
    const deadline = setTimeout(() => {
      hung = true;
      void hungRunReport(child)
        .catch((error: unknown) => `its diagnostic report could not be read: ${String(error)}`)
        .then((report) =>
          reject(
            new Error(
              `${child.spawnargs.slice(1).join(' ')} still running after ${deadlineMs / 1000} s; ` +
                `stdout: ${stdout || '(none)'}\nstderr: ${stderr || '(none)'}\n${report}`,
            ),
          ),
        );
    }, deadlineMs);
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (error) => {
      clearTimeout(deadline);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(deadline);
      if (!hung) resolve({ code: code ?? 1, stdout, stderr });
    });
  });
}

/**
 * Asks a hung tool for a diagnostic report (what its JavaScript is doing and which handles keep it alive), kills it,
 * and returns the report's telling parts. A shell between us and the tool (pipeCli) answers nothing: then only the
 * kill.
 */
async function hungRunReport(child: ChildProcess): Promise<string> {
  const before = new Set(fs.readdirSync(REPORT_DIR));
  child.kill(REPORT_SIGNAL);
  let report: DiagnosticReport | undefined;
  // Read once it parses: the file appears before the report is all written.
  for (let waited = 0; waited < 5_000 && !report; waited += 100) {
    await new Promise((r) => setTimeout(r, 100));
    const written = fs
      .readdirSync(REPORT_DIR)
      .find((f) => !before.has(f) && f.startsWith('report.') && f.includes(`.${child.pid}.`));
    if (written) report = parsedReport(path.join(REPORT_DIR, written));
  }
  if (!report) {
    // No JavaScript ran to write it: the process is stuck outside its event loop (at exit, say). Its threads' stacks
    // say where, from gdb where the machine has it.
    const stacks = threadStacks(child.pid!);
    child.kill('SIGKILL');
    return `it wrote no diagnostic report${stacks}`;
  }
  child.kill('SIGKILL');
  const handles = (report.libuv ?? []).filter((h) => h.type !== 'loop' && h.is_active && h.is_referenced !== false);
  return [
    `its JavaScript: ${report.javascriptStack?.message ?? ''}`,
    ...(report.javascriptStack?.stack ?? []).slice(0, 15),
    'the handles that keep it alive:',
    ...handles.map((h) => JSON.stringify(h)),
  ].join('\n');
}

/** The parts of Node's diagnostic report read here. */
interface DiagnosticReport {
  javascriptStack?: { message?: string; stack?: string[] };
  libuv?: Array<{ type: string; is_active: boolean; is_referenced?: boolean; [key: string]: unknown }>;
}

/** The report in a file, removed once read; undefined while it is still being written. */
function parsedReport(file: string): DiagnosticReport | undefined {
  try {
    const report = JSON.parse(fs.readFileSync(file, 'utf8')) as DiagnosticReport;
    fs.rmSync(file, { force: true });
    return report;
  } catch {
    return undefined;
  }
}

export async function runCliJson<T>(databaseUrl: string, args: string[]): Promise<T> {
  const result = await runCli(databaseUrl, ['--json', ...args]);
  if (result.code !== 0) throw new Error(`visa-crm ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** Each thread's innermost frames of a stuck process, by gdb (empty when the machine has none). */
function threadStacks(pid: number): string {
  if (!fs.existsSync('/usr/bin/gdb')) return '';
  const gdb = spawnSync('/usr/bin/gdb', ['-p', String(pid), '-batch', '-ex', 'thread apply all bt 12'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  // Thread names and Node's, V8's and libuv's frames; the C library's waits under them say nothing more.
  const frames = (gdb.stdout ?? '')
    .split('\n')
    .filter((line) => /^Thread |^#\d+ .*\b(node|v8|uv)(::|_)/.test(line))
    .map((line) => line.slice(0, 160));
  return frames.length > 0 ? `; its threads:\n${frames.slice(0, 80).join('\n')}` : '';
}
