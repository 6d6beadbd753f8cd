import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { runCli } from './cli.js';

/** What `visa-crm export --json` prints: the trailer's values and the workspace. */
export interface ExportSummary {
  workspace: string;
  events: number;
  next: string;
  head: string;
  anchor: string;
}

export function tempDir(t: Test): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vcrm-export-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs the CLI with --json, asserting it succeeded, and parses its stdout. */
export async function cliJson<T>(t: Test, url: string, args: string[]): Promise<T> {
  const result = await runCli(url, ['--json', ...args]);
  t.equal(result.code, 0, `visa-crm ${args.join(' ')}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** Lines as the async iterable an import reads. */
export async function* each(lines: string[]): AsyncGenerator<string> {
  yield* lines;
}
