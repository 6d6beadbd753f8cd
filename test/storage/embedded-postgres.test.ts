import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { DataFolderInUseError, runningInstance, startEmbeddedPostgres } from '../../src/storage/embedded-postgres.js';
import { migrate } from '../../src/storage/migrate.js';
import { createPool } from '../../src/storage/postgres.js';
import { concurrentAppendsWithFollowingReader, optimisticConcurrency } from '../support/event-store-scenarios.js';
import { TYPESCRIPT_ARGS } from '../support/typescript.js';

// The embedded server is what a newcomer gets without DATABASE_URL: the same event-store guarantees must hold on it.
t.test(
  'embedded PostgreSQL: starts (also as root), migrates, keeps the event-store guarantees, refuses a second holder',
  async (t) => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vcrm-embedded-'));
    fs.chmodSync(dataDir, 0o755);
    t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));

    const server = await startEmbeddedPostgres(dataDir);
    let stopped = false;
    t.teardown(async () => {
      if (!stopped) await server.stop();
    });
    t.match(server.url, /^postgres:\/\/postgres:.+@127\.0\.0\.1:\d+\/visa_crm$/, 'listens on loopback');
    t.same(
      await runningInstance(dataDir).then((r) => r?.url),
      server.url,
      'the data folder tells the CLI how to reach the running server',
    );

    await t.rejects(
      startEmbeddedPostgres(dataDir),
      DataFolderInUseError,
      'a second instance refuses the held data folder',
    );

    const pool = createPool(server.url, 30);
    t.same(await migrate(pool), await migrationVersions(), 'every migration applies on a new database, in order');
    t.same(await migrate(pool), [], 'applied migrations are not applied again');
    await optimisticConcurrency(t, pool);
    await concurrentAppendsWithFollowingReader(t, pool, 16, 6);
    const count = Number((await pool.query('SELECT count(*) FROM events')).rows[0].count);
    await pool.end();

    await server.stop();
    stopped = true;
    t.notOk(fs.existsSync(path.join(dataDir, 'instance.lock')), 'a clean stop releases the data folder');

    const again = await startEmbeddedPostgres(dataDir);
    const pool2 = createPool(again.url);
    const after = Number((await pool2.query('SELECT count(*) FROM events')).rows[0].count);
    await pool2.end();
    await again.stop();
    t.equal(after, count, 'the data survives a restart');
  },
);

t.test('a process killed outright (kill -9): the next start takes over its data folder and its server', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vcrm-embedded-kill-'));
  fs.chmodSync(dataDir, 0o755);
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const script = `import { startEmbeddedPostgres } from ${JSON.stringify(path.resolve('src/storage/embedded-postgres.ts'))};
    const server = await startEmbeddedPostgres(${JSON.stringify(dataDir)});
    console.log(server.url);
    setInterval(() => undefined, 1000);`;
  const child = spawn(process.execPath, [...TYPESCRIPT_ARGS, '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(out.trim());
    });
    child.on('exit', () => reject(new Error('the first process exited early')));
  });
  const pool = createPool(url, 1);
  await pool.query('CREATE TABLE survivor (n int)');
  await pool.query('INSERT INTO survivor VALUES (42)');
  await pool.end();
  const postmasterPid = Number(fs.readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);

  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  t.ok(fs.existsSync(path.join(dataDir, 'instance.lock')), 'the killed process left its lock behind');

  const again = await startEmbeddedPostgres(dataDir);
  t.teardown(() => again.stop());
  t.throws(() => process.kill(postmasterPid, 0), 'the server the killed process left running was stopped');
  const pool2 = createPool(again.url, 1);
  t.same((await pool2.query('SELECT n FROM survivor')).rows, [{ n: 42 }], 'its data is there');
  await pool2.end();
});

/** Every migration's version, ascending. Parallel branches take numbers from ranges of their own, so there are gaps. */
async function migrationVersions(): Promise<number[]> {
  const { migrations } = await import('../../src/storage/migrations/index.js');
  return migrations.map((m) => m.version).sort((a, b) => a - b);
}
