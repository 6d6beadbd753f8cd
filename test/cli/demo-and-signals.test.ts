import { spawn } from 'node:child_process';
import t from 'tap';
import { cliArgs, toolEnv } from '../support/cli.js';
import { findKeyByValue } from '../../src/keys/repository.js';
import { TEST_ENCRYPTION_KEY } from '../support/app.js';
import { freshDatabase } from '../support/db.js';

interface DemoOutput {
  url: string;
  keys: Record<string, string>;
  revoked_keys: Array<{ id: string; name: string; last4: string }>;
}

/**
 * Runs `visa-crm --json demo` in a process group of its own, waits for its JSON document, then stops it as Ctrl-C
 * does (SIGINT to the whole group) and gives back everything it wrote.
 */
function demoUntilCtrlC(databaseUrl: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...cliArgs(), '--json', 'demo'], {
      env: {
        ...toolEnv(),
        DATABASE_URL: databaseUrl,
        SECRET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
        LOG_LEVEL: 'info',
        PORT: '0',
        RUN_WORKERS: 'true',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    let interrupted = false;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (!interrupted && stdout.endsWith('}\n')) {
        interrupted = true;
        process.kill(-child.pid!, 'SIGINT');
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const logLines = (stderr: string) =>
  stderr
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { level: number; msg: string });

t.test(
  '--json demo prints one JSON document alone; a restart revokes the earlier demo keys; Ctrl-C stops cleanly',
  async (t) => {
    const { pool, url } = await freshDatabase(t);

    const first = await demoUntilCtrlC(url);
    t.equal(first.code, 0, 'exits 0 after Ctrl-C');
    const firstDemo = JSON.parse(first.stdout) as DemoOutput;
    t.same(Object.keys(firstDemo.keys).sort(), ['public_live', 'public_test', 'secret_live', 'secret_test']);
    t.same(firstDemo.revoked_keys, [], 'nothing to revoke on the first start');

    const lines = logLines(first.stderr);
    t.ok(
      lines.some((l) => l.msg === 'database ready'),
      'the service logs go to stderr',
    );
    t.equal(lines.at(-1)?.msg, 'stopped', '"stopped" is the last line');
    t.same(
      lines.filter((l) => l.level >= 40),
      [],
      'a clean stop logs no warning or error',
    );
    t.notMatch(first.stderr, /\n\s+at /, 'and no stack trace');

    const second = await demoUntilCtrlC(url);
    t.equal(second.code, 0);
    const secondDemo = JSON.parse(second.stdout) as DemoOutput;
    t.equal(secondDemo.revoked_keys.length, 4, 'the second start revokes the four keys of the first');
    for (const [kind, value] of Object.entries(firstDemo.keys)) {
      t.ok((await findKeyByValue(pool, value))?.revoked_at, `the first ${kind} key is revoked`);
      t.ok(
        secondDemo.revoked_keys.some((k) => value.endsWith(k.last4)),
        `and named among the revoked keys (${kind})`,
      );
    }
    for (const [kind, value] of Object.entries(secondDemo.keys))
      t.notOk((await findKeyByValue(pool, value))?.revoked_at, `the new ${kind} key works`);
    const active = await pool.query('SELECT count(*)::int AS n FROM api_keys WHERE revoked_at IS NULL');
    t.equal(active.rows[0].n, 4, 'four active demo keys, however many starts');
  },
);
