import pg from 'pg';
import { BatchingClient } from './batching-client.js';
import { asError, inTransaction, queryConfig, type Transaction } from './transaction.js';
import { parseJsonText } from '../shared/json-text.js';

/** Anything that runs SQL: the pool, a client, or a transaction's connection. */
export interface Queryable {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/** A transaction's connection: it also sends writes whose answers nobody reads without waiting (`Transaction.send`). */
export interface Writer extends Queryable {
  send(text: string, values?: unknown[]): void;
}

/** A transaction's writer, whose BEGIN and opening statements may still be in flight when its work starts. */
export interface OpenedWriter extends Writer {
  whenOpened(): Promise<void>;
}

/** A statement and its parameters. */
export interface Statement {
  text: string;
  values: unknown[];
}

// bigint columns (event positions, counters) come back as strings unless told otherwise; numbers are safe up to 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));
// json and jsonb through parseJsonText: PostgreSQL writes a key with a quote, backslash or control character escaped,
// which Node 24's JSON.parse can misread (src/shared/json-text.ts).
pg.types.setTypeParser(pg.types.builtins.JSON, parseJsonText);
pg.types.setTypeParser(pg.types.builtins.JSONB, parseJsonText);

/**
 * A pool of connections whose clients pipeline (pg's `pipeline` option): queries issued together on one client are
 * sent without waiting for each answer, in one write (`BatchingClient`); code that awaits each query behaves as
 * without it. A checkout waiting longer than `acquireTimeoutMs` fails with `PoolExhaustedError` (load shedding: a
 * 503, not an endless queue).
 *
 * A pool keeps every connection it has opened (`min` = `max`: pg-pool closes idle ones only above `min`). With a
 * 30 s idle timeout, the connections a burst opened were all closed together 30 s after it, and while they closed
 * and new ones were opened every statement of the process stalled (docs/decisions.md). A pool is sized for its peak,
 * and the server for every process's peak, so holding the peak's connections costs nothing the sizing had not
 * already allowed for.
 */
export function createPool(connectionString: string, max = 10, acquireTimeoutMs?: number): pg.Pool {
  return survivingLostConnections(
    new pg.Pool({
      Client: BatchingClient,
      connectionString,
      connectionTimeoutMillis: acquireTimeoutMs,
      max,
      min: max,
      pipeline: true,
    }),
  );
}

/**
 * Runs `work` on one pooled connection, outside any transaction. The statements it issues in one turn leave in one
 * write (`BatchingClient`), one round trip, and the server runs them in order, each in an implicit transaction of its
 * own: a statement's snapshot is taken once the one before it has ended. A connection on which a statement failed is
 * destroyed, never returned to the pool, as pg-pool's own `query` does. With `namedStatements` (connections straight
 * to PostgreSQL only, as for transactions) each statement is prepared by name once per connection.
 */
export async function onOneConnection<T>(
  pool: pg.Pool,
  work: (sql: Queryable) => Promise<T>,
  options: { namedStatements?: boolean } = {},
): Promise<T> {
  const client = await pool.connect();
  let failure: Error | undefined;
  try {
    if (client instanceof BatchingClient) client.holdWrites();
    return await work(options.namedStatements ? namingStatements(client) : client);
  } catch (error) {
    failure = asError(error);
    throw error;
  } finally {
    client.release(failure);
  }
}

/** A connection whose statements are prepared by name (one name per text, as a transaction's, transaction.ts). */
function namingStatements(client: pg.PoolClient): Queryable {
  return {
    query: <R extends pg.QueryResultRow>(text: string, values: unknown[] = []) =>
      client.query<R>(queryConfig(text, values, true)),
  };
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
 * Runs work in one READ COMMITTED transaction and commits; on any failure rolls back, and destroys the connection
 * if a statement failed on it (see `inTransaction`).
 */
export function withTransaction<T>(pool: pg.Pool, work: (sql: Transaction) => Promise<T>): Promise<T> {
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
