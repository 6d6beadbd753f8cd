import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Test } from 'tap';
import { migrate } from '../../src/storage/migrate.js';
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

/** A fresh, migrated database of its own for one test file, dropped when the test ends. */
export async function freshDatabase(
  t: Test,
  server = serverUrl(),
  poolSize = 20,
): Promise<{ pool: pg.Pool; url: string }> {
  const name = `vcrm_test_${randomBytes(6).toString('hex')}`;
  await admin(server, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = withDatabase(server, name);
  const pool = createPool(url, poolSize);
  await migrate(pool);
  t.teardown(async () => {
    await pool.end();
    await admin(server, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  });
  return { pool, url };
}
