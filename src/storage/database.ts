import pg from 'pg';
import type { Config } from '../config.js';
import { runningInstance, startEmbeddedPostgres } from './embedded-postgres.js';
import { migrate } from './migrate.js';
import { createPool, survivingLostConnections } from './postgres.js';

/**
 * Connections to the PostgreSQL server itself, never through a transaction pooler, for what needs a session of its
 * own: LISTEN, session advisory locks, session settings. Nothing else uses them.
 */
export interface DirectConnections {
  /** DATABASE_DIRECT_URL, or the database's own URL when it names no pooler. */
  url: string;
  /** A pool of such connections; one checked out is a session of its own until it is released. */
  pool: pg.Pool;
}

export interface Database {
  /** The requests' connections (DATABASE_URL): each transaction or statement may land on another session. */
  pool: pg.Pool;
  url: string;
  /** Set when the direct connections go elsewhere than `pool` (DATABASE_DIRECT_URL); see `directConnections`. */
  direct?: DirectConnections;
  /** 'external' when DATABASE_URL named the server, 'embedded' when this process started one. */
  kind: 'external' | 'embedded' | 'shared-embedded';
  close(): Promise<void>;
}

/** The database's direct connections: its own pool when no pooler stands in front (the embedded server, say). */
export function directConnections(db: Pick<Database, 'pool' | 'url' | 'direct'>): DirectConnections {
  return db.direct ?? { url: db.url, pool: db.pool };
}

/**
 * Direct connections are few and held long (the workers' LISTEN) or briefly (the migrations at start): unlike the
 * requests' pool, this one closes idle connections, since a server behind a pooler has few to spare.
 */
const DIRECT_CONNECTIONS = 2;
const DIRECT_IDLE_MS = 10_000;

export interface OpenOptions {
  /** The CLI may reach the server of a service already running on the same data folder instead of refusing. */
  joinRunningInstance?: boolean;
  poolSize?: number;
  log?: (message: string) => void;
}

/**
 * Opens PostgreSQL as configured (DATABASE_URL, else the embedded server in the data folder) and migrates it, over a
 * direct connection (DATABASE_DIRECT_URL) when DATABASE_URL names a pooler.
 */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir'> & Partial<Pick<Config, 'poolAcquireTimeoutMs' | 'databaseDirectUrl'>>,
  options: OpenOptions = {},
): Promise<Database> {
  const poolSize = options.poolSize ?? 20;
  if (config.databaseUrl) {
    const pool = createPool(config.databaseUrl, poolSize, config.poolAcquireTimeoutMs);
    const directUrl = config.databaseDirectUrl;
    const direct =
      directUrl && directUrl !== config.databaseUrl ? { url: directUrl, pool: createDirectPool(directUrl) } : undefined;
    const close = async () => {
      await pool.end();
      await direct?.pool.end();
    };
    try {
      await migrate(directConnections({ pool, url: config.databaseUrl, direct }).pool);
    } catch (error) {
      await close();
      throw error;
    }
    return { pool, url: config.databaseUrl, direct, kind: 'external', close };
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

function createDirectPool(connectionString: string): pg.Pool {
  return survivingLostConnections(
    new pg.Pool({ connectionString, max: DIRECT_CONNECTIONS, idleTimeoutMillis: DIRECT_IDLE_MS }),
  );
}
