import pg from 'pg';

/** Anything that runs SQL: the pool, a client, or a transaction's connection. */
export interface Queryable {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/** A statement and its parameters. */
export interface Statement {
  text: string;
  values: unknown[];
}

// bigint columns (event positions, counters) come back as strings unless told otherwise; numbers are safe up to 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

export function createPool(connectionString: string, max = 10): pg.Pool {
  return survivingLostConnections(new pg.Pool({ connectionString, max, idleTimeoutMillis: 30_000 }));
}

/**
 * Keeps a lost database connection from ending the process. An idle client losing its connection emits 'error' on
 * the pool (the next checkout reconnects). A checked-out one emits 'error' on itself as well as failing its query,
 * and pg-pool listens only while the client is idle: the query's caller gets the error, and the client, no longer
 * queryable, is dropped when released.
 */
export function survivingLostConnections(pool: pg.Pool): pg.Pool {
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

/** Runs work in one READ COMMITTED transaction, rolling back on any error. */
export async function withTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** PostgreSQL error codes the code reacts to. */
export const PgCode = {
  uniqueViolation: '23505',
  serializationFailure: '40001',
  deadlockDetected: '40P01',
  /** Raised by vcrm_expect (migration 7): a command's guess about the database was wrong; nothing was written. */
  expectationFailed: 'VC001',
} as const;

export function pgErrorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

export function pgConstraint(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'constraint' in error && typeof error.constraint === 'string' ? error.constraint : undefined;
}
