import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { DataFolderInUseError, runningInstance, startEmbeddedPostgres } from '../../src/storage/embedded-postgres.js';
import { migrate } from '../../src/storage/migrate.js';
import { createPool } from '../../src/storage/postgres.js';
import { concurrentAppendsWithFollowingReader, optimisticConcurrency } from '../support/event-store-scenarios.js';

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

/** Every migration's version, ascending. Parallel branches take numbers from ranges of their own, so there are gaps. */
async function migrationVersions(): Promise<number[]> {
  const { migrations } = await import('../../src/storage/migrations/index.js');
  return migrations.map((m) => m.version).sort((a, b) => a - b);
}
