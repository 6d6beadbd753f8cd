import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Test } from 'tap';
import { toolEnv, type CliResult } from '../support/cli.js';

/** The project's folder: where `npm start` runs and `bin/visa-crm.js` lives. */
export const ROOT = path.resolve(import.meta.dirname, '../..');

export const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

/** `node bin/visa-crm.js` as a shell word list, on the Node the suites run on (the project's Node 24). */
export const CLI = [process.execPath, path.join(ROOT, 'bin', 'visa-crm.js')].map(shellQuote).join(' ');

export function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The README's text from the heading `## <title>` to the next heading of that level. */
export function readmeSection(title: string): string {
  const start = README.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`the README has no section "${title}"`);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end < 0 ? undefined : end);
}

/** The commands of the ```sh blocks of `text`, a line ending in `\` joined to the next as the shell joins them. */
export function shellCommands(text: string): string[] {
  const blocks = [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  return blocks.flatMap((block) =>
    block
      .replaceAll('\\\n', ' ')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('#')),
  );
}

/** The inline code of `text` that starts with `prefix` (a span may wrap over lines), each with single spaces. */
export function inlineCommands(text: string, prefix: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, '');
  return [...prose.matchAll(/`([^`]+)`/g)]
    .map((m) => m[1]!.replace(/\s+/g, ' ').trim())
    .filter((code) => code.startsWith(prefix));
}

/** `command` with each placeholder of the README replaced by what it stands for here; `visa-crm` is the built tool. */
export function substitute(command: string, values: Record<string, string>): string {
  let result = command.replace(/(^|\s)(?:npx )?visa-crm(?= )/, `$1${CLI}`);
  for (const [placeholder, value] of Object.entries(values)) result = result.replaceAll(placeholder, value);
  return result;
}

/**
 * The environment of someone who set none of the README's configuration variables (its Configuration table), so the
 * service takes the defaults `npm start` takes (the embedded PostgreSQL above all), plus `settings`. The suite's own
 * DATABASE_URL and SECRET_ENCRYPTION_KEY are among what is removed.
 */
export function userEnv(settings: Record<string, string>): NodeJS.ProcessEnv {
  const table = readmeSection('Configuration').split('\n###')[0]!;
  const names = [...table.matchAll(/^\| ([^|]+) \|/gm)].flatMap((row) =>
    [...row[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!),
  );
  if (!names.includes('DATABASE_URL')) throw new Error('the README configuration table was not found');
  const env = toolEnv();
  for (const name of [...names, 'NODE_ENV', 'VISA_CRM_API_KEY', 'VISA_CRM_API_URL']) delete env[name];
  return { ...env, ...settings };
}

/** A temporary folder removed at the end; as root, one the `postgres` user can enter (`chmod o+x`, as the README says). */
export function journeyFolder(t: Test): string {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'vcrm-journey-'));
  if (process.getuid?.() === 0) chmodSync(folder, 0o711);
  t.teardown(() => rmSync(folder, { recursive: true, force: true }));
  return folder;
}

export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A process started through `sh -c`, leading a process group of its own so that Ctrl-C can reach all of it. */
export interface ShellProcess {
  child: ChildProcess & { stdout: Readable; stderr: Readable };
  output(): { stdout: string; stderr: string };
  /** Resolves with the first stdout line matching `re`; rejects after `timeoutMs` or when the process ends first. */
  line(re: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Sends SIGINT to the group, as Ctrl-C in a terminal does; resolves with the exit code, or the signal it died of. */
  interrupt(timeoutMs?: number): Promise<number | NodeJS.Signals | null>;
}

/** `command` run by `exec` (after its variable assignments), so that the shell gives way to the program it starts. */
export function execForm(command: string): string {
  return command.replace(/^((?:[A-Za-z_][A-Za-z0-9_]*=\S+ +)*)/, '$1exec ');
}

/**
 * Starts `command` with `sh -c`, as `exec` so that Ctrl-C reaches the program and its exit code is what is seen (sh
 * itself would die of the SIGINT).
 */
export function startShell(t: Test, command: string, options: { cwd: string; env: NodeJS.ProcessEnv }): ShellProcess {
  const child = spawn('sh', ['-c', execForm(command)], {
    ...options,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal)),
  );
  const signal = (name: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, name);
  };
  const interrupt = async (timeoutMs = 30_000) => {
    signal('SIGINT');
    const timer = setTimeout(() => signal('SIGKILL'), timeoutMs);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };
  // A failed step leaves nothing running: the service and its PostgreSQL stop as after Ctrl-C.
  t.teardown(() => interrupt());
  const line = (re: RegExp, timeoutMs = 60_000) =>
    waitFor(
      () => stdout.split('\n').reduce<RegExpExecArray | null>((found, l) => found ?? re.exec(l), null),
      () => child.exitCode !== null,
      timeoutMs,
      () =>
        `no line of \`${command.slice(0, 80)}…\` matched ${re}; stdout:\n${stdout}\nstderr:\n${stderr.slice(-3000)}`,
    );
  return { child, output: () => ({ stdout, stderr }), line, interrupt };
}

/** Runs `command` with `sh -c` to its end, at most `timeoutMs`. */
export async function runShell(
  command: string,
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<CliResult> {
  const child = spawn('sh', ['-c', command], { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const [code] = (await once(child, 'close')) as [number | null];
  clearTimeout(timer);
  return { code: code ?? 1, stdout, stderr };
}

/** Polls `check` until it gives a value; fails when `gaveUp` says so or after `timeoutMs`, with `message()`. */
export async function waitFor<T>(
  check: () => T | null | undefined,
  gaveUp: () => boolean,
  timeoutMs: number,
  message: () => string,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== null && value !== undefined) return value;
    if (gaveUp() || Date.now() > until) throw new Error(message());
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** What `visa-crm demo` printed for people to read. */
export interface DemoPrinted {
  url: string;
  secretLive: string;
  secretTest: string;
  /** The owner's one-time link to choose a password; absent once the owner has one. */
  ownerLink: string | undefined;
  owner: string;
}

/** Reads the demo's human text (src/cli/verbs/service.ts), the lines a person copies from. */
export function demoPrinted(stdout: string): DemoPrinted {
  const value = (re: RegExp) => {
    const found = re.exec(stdout)?.[1];
    if (!found) throw new Error(`the demo did not print ${re}:\n${stdout}`);
    return found;
  };
  return {
    url: value(/is running at (http:\/\/\S+) with/),
    secretLive: value(/^ {2}secret live key: +(\S+)$/m),
    secretTest: value(/^ {2}secret test key: +(\S+)$/m),
    ownerLink: /choose a password at (http:\/\/\S+) /.exec(stdout)?.[1],
    owner: value(/^ {2}Sign in as (\S+?):? /m),
  };
}

/** A request an HTTP receiver got. */
export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A plain HTTP receiver on `host` (loopback) answering 200 to every POST, for `visa-crm listen --forward-to`. */
export async function httpReceiver(t: Test, host: string): Promise<{ port: number; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      response.writeHead(200).end('ok');
    });
  });
  server.listen(0, host);
  await once(server, 'listening');
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  return { port: (server.address() as AddressInfo).port, received };
}
