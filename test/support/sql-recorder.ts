import pg from 'pg';
import type { Test } from 'tap';
import type { Queryable } from '../../src/storage/postgres.js';

/** A statement as it went to the server. */
export interface SentStatement {
  /** Which connection sent it (a number per pg Client, in the order they first sent something). */
  connection: number;
  text: string;
  values: unknown[];
  /** Sent as a prepared (named) statement, parsed once per connection. */
  prepared: boolean;
}

/** Records every statement this process sends through pg while the test runs (every pg Client, every pool). */
export function recordSql(t: Test): SentStatement[] {
  const sent: SentStatement[] = [];
  const ids = new WeakMap<pg.Client, number>();
  let connections = 0;
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    let connection = ids.get(this);
    if (connection === undefined) {
      connection = ++connections;
      ids.set(this, connection);
    }
    const first = args[0];
    const config = (typeof first === 'string' ? { text: first } : first) as {
      text: string;
      values?: unknown[];
      name?: string;
    };
    const values = Array.isArray(config.values) ? config.values : Array.isArray(args[1]) ? args[1] : [];
    sent.push({ connection, text: config.text, values, prepared: config.name !== undefined });
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  t.teardown(() => {
    pg.Client.prototype.query = original;
  });
  return sent;
}

/** The statements of one transaction: from the BEGIN at `index` through its COMMIT or ROLLBACK, on that connection. */
export function transactionAt(sent: readonly SentStatement[], index: number): SentStatement[] {
  const begin = sent[index]!;
  const statements: SentStatement[] = [];
  for (const statement of sent.slice(index)) {
    if (statement.connection !== begin.connection) continue;
    statements.push(statement);
    if (/^(COMMIT|ROLLBACK)$/.test(statement.text)) break;
  }
  return statements;
}

/** Every transaction recorded, each as its statements. */
export function transactions(sent: readonly SentStatement[]): SentStatement[][] {
  return sent.flatMap((s, i) => (s.text === 'BEGIN' ? [transactionAt(sent, i)] : []));
}

/** A statement as sent: its text and values. */
export interface Statement {
  text: string;
  values?: unknown[];
}

/**
 * A Queryable over a pool that keeps each statement it is given, for a test to read the plans of one function's
 * statements (recordSql records every statement of the process instead).
 */
export function recordingQueryable(pool: pg.Pool): { recording: Queryable; seen: Statement[] } {
  const seen: Statement[] = [];
  const recording: Queryable = {
    query: <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => {
      seen.push({ text, values });
      return pool.query<R>(text, values);
    },
  };
  return { recording, seen };
}
