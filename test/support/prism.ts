import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { projectRoot } from '../../src/shared/paths.js';

const PRISM = path.join(projectRoot(), 'node_modules/.bin/prism');
/** Prism reads the document and starts listening in about 2 s; a start past this fails the suite. */
const START_DEADLINE_MS = 30_000;

/** A free loopback port (taken and given back; Prism binds it right after). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return address.port;
}

export interface PrismProxy {
  baseUrl: string;
  port: number;
}

/**
 * Stoplight Prism as a validating proxy in front of `upstream`, for the OpenAPI document given: `--errors` turns every
 * response that breaks the document into Prism's own 500 (application/problem+json, `type` ending in VIOLATIONS);
 * requests are forwarded without being validated (`--validate-request=false`), so refused requests reach the service
 * and their answers are checked too. Prism's own CORS answers are off, so it answers nothing in the service's place.
 * Prism reports an answer whose status the document does not declare as a warning (the `sl-violations` header), not as
 * an error: callers read that header too. `errors: false` for requests without credentials, which Prism answers itself
 * with 401 under --errors.
 */
export async function startPrismProxy(
  t: Test,
  document: unknown,
  upstream: string,
  options: { errors?: boolean } = {},
): Promise<PrismProxy> {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'vcrm-prism-'));
  const file = path.join(folder, 'openapi.json');
  writeFileSync(file, JSON.stringify(document));
  const port = await freePort();
  const args = [
    'proxy',
    file,
    upstream,
    `--errors=${options.errors ?? true}`,
    '--validate-request=false',
    '--cors=false',
  ];
  // On the suites' own Node (Prism 5.16 needs 24), not whichever `node` its script's shebang finds on PATH.
  const child = spawn(process.execPath, [PRISM, ...args, '-h', '127.0.0.1', '-p', String(port), '-v', 'error'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  t.teardown(async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(folder, { recursive: true, force: true });
  });
  const deadline = Date.now() + START_DEADLINE_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`prism exited with ${child.exitCode}:\n${output}`);
    if (await answers(port)) return { baseUrl: `http://127.0.0.1:${port}`, port };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`prism did not listen within ${START_DEADLINE_MS / 1000} s:\n${output}`);
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
