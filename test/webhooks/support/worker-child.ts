import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Test } from 'tap';
import { TEST_ENCRYPTION_KEY } from '../../support/app.js';
import { TYPESCRIPT_ARGS } from '../../support/typescript.js';
import type { Harness } from './harness.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');

/**
 * Starts the delivery workers in a process of their own (worker-process.ts) on the harness's database, trusting its
 * test CA and loopback; killed with SIGKILL at the end of the test if still running. It prints `ready` once started.
 */
export function spawnWorkerProcess(t: Test, h: Harness) {
  const child = spawn(process.execPath, [...TYPESCRIPT_ARGS, 'test/webhooks/support/worker-process.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: h.services.config.databaseUrl!,
      SECRET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      WEBHOOK_TEST_CA: h.pki.caFile,
      WEBHOOK_ALLOW_LOOPBACK: 'true',
      LOG_LEVEL: 'silent',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return child;
}
