import pg from 'pg';
import { connectionLost, inTransaction, mayWrite, retriesAfterLoss } from './pipeline.js';
import { statementName } from './round-trip.js';

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

/**
 * A pool of connections; transactions on them send their statements in round trips (see pipeline.ts). A checkout
 * waiting longer than `acquireTimeoutMs` fails with `PoolExhaustedError` (load shedding: a 503, not an endless queue).
 *
 * A pool keeps every connection it has opened (`min` = `max`: pg-pool closes idle ones only above `min`). With the
 * 30 s idle timeout it had before, the connections a burst opened were all closed together 30 s after it, and while
 * they closed and new ones were opened every statement of the process and its workers stalled for 0.5 to 1 s
 * (bench:webhooks, docs/benchmarks.md; docs/decisions.md). A pool is sized for its peak, and the server for every
 * process's peak, so holding the peak's connections costs nothing the sizing had not already allowed for.
 */
export function createPool(connectionString: string, max = 10, acquireTimeoutMs?: number): pg.Pool {
  const pool = new pg.Pool(keepingConnections({ connectionString, connectionTimeoutMillis: acquireTimeoutMs }, max));
  return retryingLostReads(survivingLostConnections(pool));
}

/** Pool options for `max` connections, every one kept once opened (min = max; see createPool). */
export function keepingConnections(options: pg.PoolConfig, max: number): pg.PoolConfig {
  return { ...options, max, min: max };
}

/**
 * A read sent with `pool.query` on a pooled connection whose server process has ended since it was last used (a
 * restart, `pg_terminate_backend`) fails with the connection; it is sent again on another one, as often as the pool
 * could hold dead connections. Only reads: a write in its own implicit transaction may have committed before the
 * connection was lost. (Transactions retry in `inTransaction`.)
 */
function retryingLostReads(pool: pg.Pool): pg.Pool {
  const query = pool.query.bind(pool) as (config: unknown, values?: unknown) => Promise<pg.QueryResult>;
  const retrying = async (config: string | pg.QueryConfig, values?: unknown) => {
    const text = typeof config === 'string' ? config : config.text;
    for (let attempt = 1; ; attempt++) {
      try {
        return await query(config, values);
      } catch (error) {
        if (attempt > retriesAfterLoss(pool) || !connectionLost(error) || mayWrite(text)) throw error;
      }
    }
  };
  // pg's overloads (callbacks, streams) are not used here: every caller passes text or a config and awaits.
  pool.query = retrying as unknown as typeof pool.query;
  return pool;
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

/**
 * Sends one statement outside a transaction as a prepared statement: each connection parses and plans it once (pg's
 * named statements), where `pool.query(text)` parses and plans it on every call. For statements run often whose plan
 * does not depend on their values: the webhook worker's recording of attempts spent about 0.5 ms of PostgreSQL CPU
 * per call planning it (bench/claim-explain.ts). The name differs from the pipeline's own for the same text, so the
 * two never collide on one connection.
 */
export function queryPrepared<R extends pg.QueryResultRow = pg.QueryResultRow>(
  pool: pg.Pool,
  text: string,
  values: unknown[],
): Promise<pg.QueryResult<R>> {
  return pool.query<R>({ name: `${statementName(text)}_p`, text, values });
}

/**
 * Runs work in one READ COMMITTED transaction and commits; on any failure rolls back, and destroys the connection
 * unless nothing unexpected happened on it (see `inTransaction`).
 */
export function withTransaction<T>(pool: pg.Pool, work: (sql: Queryable) => Promise<T>): Promise<T> {
  return inTransaction(pool, work);
}

/** PostgreSQL error codes the code reacts to. */
export const PgCode = {
  uniqueViolation: '23505',
  serializationFailure: '40001',
  deadlockDetected: '40P01',
} as const;

/** pg-pool's error when a checkout or a new connection took longer than `connectionTimeoutMillis`. */
export function poolTimedOut(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error.message === 'timeout exceeded when trying to connect' ||
      error.message === 'Connection terminated due to connection timeout')
  );
}

export function pgErrorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string'
    ? error.code
    : undefined;
}

export function pgConstraint(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'constraint' in error && typeof error.constraint === 'string'
    ? error.constraint
    : undefined;
}
