import { spawn, type ChildProcess } from 'node:child_process';
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
  const env = { ...base };
  if (options.length > 0) env.NODE_OPTIONS = options.join(' ');
  else delete env.NODE_OPTIONS;
  return env;
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

export function collect(child: ChildProcess & { stdout: Readable; stderr: Readable }): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

export async function runCliJson<T>(databaseUrl: string, args: string[]): Promise<T> {
  const result = await runCli(databaseUrl, ['--json', ...args]);
  if (result.code !== 0) throw new Error(`visa-crm ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}
