import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import type { Test } from 'tap';
import { migrate } from '../../src/storage/migrate.js';
import { migrations } from '../../src/storage/migrations/index.js';
import { createPool } from '../../src/storage/postgres.js';

/** The server the suites run against: DATABASE_URL (the test command starts an embedded one when it is unset). */
export function serverUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url)
    throw new Error(
      'DATABASE_URL is not set: run the suites through `npm test`, or one file with ' +
        '`npm run test:only -- <file>`; both start an embedded PostgreSQL when DATABASE_URL is unset',
    );
  return url;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function admin<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * The name of a database holding every migration of this checkout, for new databases to be copied from: its suffix is
 * a digest of the migrations, so a checkout with other migrations (another branch on the same server) has its own.
 */
const TEMPLATE = `vcrm_template_${createHash('sha256')
  .update(JSON.stringify(migrations.map((m) => [m.version, m.name, m.sql, m.run?.toString() ?? null])))
  .digest('hex')
  .slice(0, 16)}`;

const templates = new Map<string, Promise<void>>();

/**
 * Makes the template on the server once: migrated under another name, then renamed, so no test file ever copies a
 * half-migrated one; the files starting together wait on an advisory lock. Copying it (0.3 s here) is what each test
 * file's database costs instead of running every migration again (2.9 s).
 */
function ensureTemplate(server: string): Promise<void> {
  let made = templates.get(server);
  if (!made) {
    made = admin(server, async (c) => {
      const lock = Number.parseInt(TEMPLATE.slice(-8), 16) | 0;
      await c.query('SELECT pg_advisory_lock($1)', [lock]);
      try {
        const found = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [TEMPLATE]);
        if (found.rowCount) return;
        const building = `${TEMPLATE}_building`;
        await c.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
        await c.query(`CREATE DATABASE ${building}`);
        const pool = createPool(withDatabase(server, building), 1);
        try {
          await migrate(pool);
        } finally {
          await pool.end();
        }
        await c.query(`ALTER DATABASE ${building} RENAME TO ${TEMPLATE}`);
      } finally {
        await c.query('SELECT pg_advisory_unlock($1)', [lock]);
      }
    });
    templates.set(server, made);
  }
  return made;
}

/**
 * The test command's run (scripts/run-tests.mjs sets it): the databases of its files carry it in their name and the
 * command drops them all once tap is done. Dropping each as its file ends made the next copies slow on ext4 without a
 * journal: its inode allocator steps over every inode freed in the last seconds, one lookup each, so a copy of the
 * template (about 1,000 files) cost 0.4 s of kernel time where it costs 0.03 s (measured 2026-11-28).
 */
const RUN = /^[a-z0-9]{1,16}$/.test(process.env.VISA_CRM_TEST_RUN ?? '') ? process.env.VISA_CRM_TEST_RUN : undefined;

/**
 * A fresh, migrated database of its own for one test file (a copy of the template), dropped when the test ends, or
 * when the test command's run ends (`VISA_CRM_TEST_RUN`, above).
 */
export async function freshDatabase(
  t: Test,
  server = serverUrl(),
  poolSize = 20,
): Promise<{ pool: pg.Pool; url: string }> {
  await ensureTemplate(server);
  const { pool, url } = await databaseOfItsOwn(t, server, `TEMPLATE ${TEMPLATE}`, poolSize);
  await migrate(pool);
  return { pool, url };
}

/**
 * An empty database of its own (no migration applied: a test of the upgrades applies them), dropped as freshDatabase's.
 */
export function emptyDatabase(t: Test, poolSize = 4, server = serverUrl()): Promise<{ pool: pg.Pool; url: string }> {
  return databaseOfItsOwn(t, server, '', poolSize);
}

async function databaseOfItsOwn(
  t: Test,
  server: string,
  template: string,
  poolSize: number,
): Promise<{ pool: pg.Pool; url: string }> {
  const { url, drop } = await newTestDatabase(server, template);
  const pool = createPool(url, poolSize);
  t.teardown(async () => {
    await pool.end();
    await drop();
  });
  return { pool, url };
}

/**
 * A new database on the server (a copy of `template`, e.g. `TEMPLATE x`, or empty), named for the test command's run,
 * and how to drop it once the test is done with it: nothing to do within the run (the command drops the run's
 * databases at its end), else dropped once its sessions have closed.
 */
export async function newTestDatabase(
  server: string,
  template = '',
): Promise<{ name: string; url: string; drop: () => Promise<void> }> {
  const name = `vcrm_test_${RUN ? `${RUN}_` : ''}${randomBytes(6).toString('hex')}`;
  await admin(server, (c) => c.query(`CREATE DATABASE ${name} ${template}`));
  return {
    name,
    url: withDatabase(server, name),
    drop: () => (RUN ? Promise.resolve() : dropOnceClosed(server, name)),
  };
}

/**
 * Drops a test's database once its sessions have closed. pg's `pool.end()` resolves before its connections have
 * closed (brianc/node-postgres#2328, #3287), and a forced drop at once ended one still closing with FATAL 57P01, which
 * tap reported as the test's failure (queue-races.test.ts, 2026-11-30). A session still there after 5 s is ended.
 */
async function dropOnceClosed(server: string, name: string): Promise<void> {
  await admin(server, async (c) => {
    for (let waited = 0; waited < 5_000; waited += 20) {
      const { rows } = await c.query<{ open: number }>(
        'SELECT count(*)::int AS open FROM pg_stat_activity WHERE datname = $1',
        [name],
      );
      if (rows[0]!.open === 0) break;
      await delay(20);
    }
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
}
