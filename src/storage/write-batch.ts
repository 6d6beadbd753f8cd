import type pg from 'pg';
import type { Queryable, Statement } from './postgres.js';
import { runScript } from './statement-script.js';

/** What projections and trailing command writes run SQL through: a connection, or a WriteBatch that defers writes. */
export type SqlRunner = Queryable;

/** Runs statements in one round trip and returns the last one's result. */
export interface ScriptRunner {
  runScript<R extends pg.QueryResultRow = pg.QueryResultRow>(statements: readonly Statement[]): Promise<pg.QueryResult<R>>;
}

/** A plain connection as a ScriptRunner. */
export function scriptsOn(client: pg.ClientBase): ScriptRunner {
  return { runScript: (statements) => runScript(client, statements) };
}

const WRITE = /^\s*(INSERT|UPDATE|DELETE)\b/i;
const RETURNING = /\bRETURNING\b/i;
const READ_ONLY = /^\s*SELECT\b/i;
const WRITE_WORD = /\b(INSERT|UPDATE|DELETE)\b|\bFOR\s+(KEY\s+)?SHARE\b/i;

/**
 * True unless the statement is certainly a read: a SELECT with no INSERT, UPDATE or DELETE in it and no row locks
 * (which, like writes, give the transaction its id).
 */
export function mayWrite(text: string): boolean {
  return !READ_ONLY.test(text) || WRITE_WORD.test(text);
}

const DEFERRED = { command: 'DEFERRED', rowCount: null, oid: 0, fields: [], rows: [] } as unknown as pg.QueryResult;

/**
 * Writes whose result nobody reads (INSERT, UPDATE, DELETE without RETURNING) wait and go to the server in one
 * round trip with the next read, or with COMMIT. Every round trip saved on a command's tail is latency saved on
 * every write request. A failing write surfaces at that next round trip, still inside the transaction.
 */
export class WriteBatch implements SqlRunner {
  private pending: Statement[] = [];

  constructor(private readonly runner: ScriptRunner) {}

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    if (WRITE.test(text) && !RETURNING.test(text)) {
      this.pending.push({ text, values });
      return DEFERRED as pg.QueryResult<R>;
    }
    // The waiting writes and this read in one round trip; the read sees the writes.
    return this.runner.runScript<R>(this.take({ text, values }));
  }

  async flush(): Promise<void> {
    if (this.pending.length > 0) await this.runner.runScript(this.take());
  }

  /** Queues any statement (a check, say) to go with the waiting writes, in order; its result is not read. */
  defer(statement: Statement): void {
    this.pending.push(statement);
  }

  /** Hands the waiting writes over unsent (to be sent with other transactions' writes) and forgets them. */
  takePending(): Statement[] {
    return this.take();
  }

  /** The waiting writes and COMMIT, in one round trip. */
  async commit(): Promise<void> {
    await this.runner.runScript(this.take({ text: 'COMMIT', values: [] }));
  }

  private take(last?: Statement): Statement[] {
    const statements = last ? [...this.pending, last] : this.pending;
    this.pending = [];
    return statements;
  }
}
