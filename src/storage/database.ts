import type pg from 'pg';
import type { Config } from '../config.js';
import { runningInstance, startEmbeddedPostgres } from './embedded-postgres.js';
import { migrate } from './migrate.js';
import { createPool } from './postgres.js';

export interface Database {
  pool: pg.Pool;
  url: string;
  /** 'external' when DATABASE_URL named the server, 'embedded' when this process started one. */
  kind: 'external' | 'embedded' | 'shared-embedded';
  close(): Promise<void>;
}

export interface OpenOptions {
  /** The CLI may reach the server of a service already running on the same data folder instead of refusing. */
  joinRunningInstance?: boolean;
  poolSize?: number;
  log?: (message: string) => void;
}

/** Opens PostgreSQL as configured (DATABASE_URL, else the embedded server in the data folder) and migrates it. */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir'> & Partial<Pick<Config, 'poolAcquireTimeoutMs'>>,
  options: OpenOptions = {},
): Promise<Database> {
  const poolSize = options.poolSize ?? 20;
  if (config.databaseUrl) {
    const pool = createPool(config.databaseUrl, poolSize, config.poolAcquireTimeoutMs);
    await migrate(pool);
    return { pool, url: config.databaseUrl, kind: 'external', close: () => pool.end() };
  }
  if (options.joinRunningInstance) {
    const running = await runningInstance(config.dataDir);
    if (running) {
      const pool = createPool(running.url, poolSize, config.poolAcquireTimeoutMs);
      await migrate(pool);
      return { pool, url: running.url, kind: 'shared-embedded', close: () => pool.end() };
    }
  }
  const server = await startEmbeddedPostgres(config.dataDir, options.log);
  const pool = createPool(server.url, poolSize, config.poolAcquireTimeoutMs);
  try {
    await migrate(pool);
  } catch (error) {
    await pool.end();
    await server.stop();
    throw error;
  }
  return {
    pool,
    url: server.url,
    kind: 'embedded',
    async close() {
      await pool.end();
      await server.stop();
    },
  };
}
