import type pg from 'pg';
import { migrations as allMigrations, type Migration } from './migrations/index.js';

// Arbitrary constant: one advisory lock id so that processes starting together migrate one at a time.
const MIGRATION_LOCK_ID = 7_311_001;

/** Applies the migrations not yet applied, each in its own transaction, and returns the versions applied. */
export async function migrate(pool: pg.Pool, migrations: Migration[] = allMigrations): Promise<number[]> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set(
      (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version),
    );
    const applied: number[] = [];
    for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(migration.version)) continue;
      // A migration is several statements in one text, which only the simple protocol runs; on the lock's own
      // connection, in a transaction of its own.
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        if (migration.run) await migration.run(client);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
          migration.version,
          migration.name,
        ]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
      applied.push(migration.version);
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    client.release();
  }
}
