import type pg from 'pg';
import type { Queryable, Statement } from './postgres.js';
import { runScriptResults } from './statement-script.js';
import { mayWrite, type ScriptRunner } from './write-batch.js';

/** A transaction's connection as its commands see it: queries, scripts, and what has been sent so far. */
export interface TransactionChannel extends Queryable, ScriptRunner {
  /** True once BEGIN and the opening have gone to the server. */
  readonly opened: boolean;
  /** True once a statement that may write has gone to the server in this transaction. */
  readonly wrote: boolean;
}

/**
 * A transaction's connection whose opening (BEGIN, a first statement such as a write's registration, the locks) waits
 * and goes to the server with the transaction's first query, in one round trip. PostgreSQL runs the statements of
 * one simple query in order, so that first query runs holding the locks, as if each had been sent alone.
 */
export class TransactionSql implements TransactionChannel {
  private opening: Statement[] | null;
  private sentWrite = false;

  constructor(
    private readonly client: pg.PoolClient,
    opening: Statement[],
  ) {
    this.opening = opening;
  }

  /** True once the opening has gone to the server (whether or not it succeeded). */
  get opened(): boolean {
    return this.opening === null;
  }

  /** True once a statement that may write has been sent. */
  get wrote(): boolean {
    return this.sentWrite;
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    if (this.opening === null) {
      if (mayWrite(text)) this.sentWrite = true;
      return this.client.query<R>(text, values);
    }
    return this.runScript<R>([{ text, values }]);
  }

  async runScript<R extends pg.QueryResultRow = pg.QueryResultRow>(statements: readonly Statement[]): Promise<pg.QueryResult<R>> {
    const results = await this.runScriptResults<R>(statements);
    return results[results.length - 1]!;
  }

  /** The statements (after the opening, if it has not gone yet) in one round trip: each one's result, in order. */
  async runScriptResults<R extends pg.QueryResultRow = pg.QueryResultRow>(statements: readonly Statement[]): Promise<pg.QueryResult<R>[]> {
    if (statements.some((s) => mayWrite(s.text))) this.sentWrite = true;
    const opening = this.opening ?? [];
    this.opening = null;
    const results = await runScriptResults<R>(this.client, [...opening, ...statements]);
    return results.slice(opening.length);
  }
}
