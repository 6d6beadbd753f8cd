import type pg from 'pg';
import type { Queryable, Statement } from './postgres.js';
import { RoundTrip, SkippedAfterFailure, type Exchange } from './round-trip.js';

/**
 * The SQL transport of a transaction. Every statement travels in the extended protocol with its values as bind
 * parameters, never as SQL text. Statements are not sent one by one: those a transaction gives during one turn of
 * the event loop travel together as one round trip (round-trip.ts: Parse once per connection, Bind, Execute each,
 * one Sync), and the answers come back in the same order; a caller waits only for what it reads. So a command that
 * gives BEGIN, its locks and a read, then its writes and COMMIT pays two round trips.
 *
 * Anything unexpected on the connection (a statement that failed, a COMMIT that rolled back, a ROLLBACK that did
 * not answer) makes it unfit for the next caller: `release` then destroys it instead of returning it to the pool.
 */

const READ_ONLY = /^\s*(SELECT|BEGIN|COMMIT|ROLLBACK)\b/i;
const WRITE_WORD = /\b(INSERT|UPDATE|DELETE)\b|\bFOR\s+(KEY\s+)?SHARE\b/i;

/**
 * True unless the statement is certainly a read (or transaction control): a SELECT with no INSERT, UPDATE or DELETE
 * in it and no row locks (which, like writes, give the transaction its id).
 */
export function mayWrite(text: string): boolean {
  return !READ_ONLY.test(text) || WRITE_WORD.test(text);
}

/** COMMIT answered ROLLBACK: the transaction had failed, though no statement's own error reached us. */
export class TransactionRolledBack extends Error {
  constructor() {
    super('The transaction was rolled back by the server instead of committed');
    this.name = 'TransactionRolledBack';
  }
}

/** What a command's SQL goes through inside a transaction: its own, or its part of one shared with others. */
export interface TransactionChannel extends Queryable {
  /** True once BEGIN and the opening statements have been answered. */
  readonly opened: boolean;
  /** True once a statement that may write has been sent in the transaction (by anyone sharing it). */
  readonly wrote: boolean;
  /** Sends a statement whose answer nobody reads; a failure surfaces at the next query or at COMMIT. */
  send(text: string, values?: unknown[]): void;
}

/** One transaction on a pipelined connection. */
export class PipelinedTransaction implements TransactionChannel {
  private failure: unknown = undefined;
  private wroteSomething = false;
  private openingAnswered = false;
  private readonly unread: Promise<unknown>[] = [];
  private ended = false;
  private commitSent = false;
  private gathered: Exchange[] = [];

  /**
   * Sends BEGIN and `opening` (statements the transaction runs first, such as a write's registration or its stream
   * locks) at once; they travel with whatever is sent next, and nobody waits for them alone.
   */
  constructor(
    private readonly client: pg.PoolClient,
    opening: readonly Statement[] = [],
  ) {
    let last: Promise<unknown> = this.sendUnread({ text: 'BEGIN', values: [] });
    for (const statement of opening) last = this.sendUnread(statement);
    // Attached before anyone can wait on a later statement, so it runs before their continuations.
    last.then(
      () => (this.openingAnswered = true),
      () => undefined,
    );
  }

  /** True once BEGIN and the opening statements have been answered (a later read has come back). */
  get opened(): boolean {
    return this.openingAnswered;
  }

  /** True once a statement that may write has been sent: the transaction then has (or is getting) its id. */
  get wrote(): boolean {
    return this.wroteSomething;
  }

  /** Sends a statement and waits for its answer. If an earlier statement failed, rejects with that first failure. */
  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
  ): Promise<pg.QueryResult<R>> {
    return this.wait(this.dispatch<R>({ text, values }));
  }

  /**
   * Like `query`, but the statement is parsed and planned for its own values each time instead of prepared once:
   * for queries whose best plan depends on the values (a generic plan would not use them as index bounds).
   */
  async queryUnprepared<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
  ): Promise<pg.QueryResult<R>> {
    return this.wait(this.dispatch<R>({ text, values }, false));
  }

  private async wait<R extends pg.QueryResultRow>(answer: Promise<pg.QueryResult<R>>): Promise<pg.QueryResult<R>> {
    try {
      return await answer;
    } catch (error) {
      throw this.failure ?? error;
    }
  }

  /**
   * Sends a statement whose answer nobody reads (a write without RETURNING, a setting). Its failure aborts the
   * transaction and surfaces at the next `query` or at `commit`.
   */
  send(text: string, values: unknown[] = []): void {
    this.sendUnread({ text, values });
  }

  /**
   * True when the connection was lost (or the server ended the session) before COMMIT was sent: nothing of the
   * transaction can have been committed, so running it again on another connection is safe.
   */
  get lostBeforeCommit(): boolean {
    return !this.commitSent && this.failure !== undefined && connectionLost(this.failure);
  }

  /** Sends COMMIT and waits for everything sent before it. Throws the first failure if anything failed. */
  async commit(): Promise<void> {
    if (this.failure !== undefined) {
      // Known to have failed: COMMIT would only be answered with ROLLBACK, so it is not sent at all.
      this.ended = true;
      throw this.failure;
    }
    this.commitSent = true;
    const result = await this.query('COMMIT');
    this.ended = true;
    if (this.failure !== undefined) throw this.failure;
    if (result.command !== 'COMMIT') {
      this.failure = new TransactionRolledBack();
      throw this.failure;
    }
  }

  /**
   * Ends the transaction after a failure and says whether the connection may be reused: only when no statement
   * failed and ROLLBACK was answered. Returns the reason to destroy it otherwise.
   */
  async rollback(): Promise<Error | undefined> {
    if (this.ended) return this.failure === undefined ? undefined : asError(this.failure);
    this.ended = true;
    if (this.failure !== undefined) return asError(this.failure);
    try {
      await this.dispatch({ text: 'ROLLBACK', values: [] });
      await Promise.allSettled(this.unread);
    } catch (error) {
      return asError(error);
    }
    return this.failure === undefined ? undefined : asError(this.failure);
  }

  /** Gives the statements of this turn of the event loop to the connection as one round trip. */
  private sendGathered(): void {
    const exchanges = this.gathered;
    this.gathered = [];
    if (exchanges.length > 0) new RoundTrip(this.client, exchanges).send();
  }

  private sendUnread(statement: Statement): Promise<unknown> {
    const answer = this.dispatch(statement);
    // Handled here: the failure is recorded by send() and surfaces at the next query or at commit.
    const settled = answer.then(
      () => undefined,
      () => undefined,
    );
    this.unread.push(settled);
    return answer;
  }

  private dispatch<R extends pg.QueryResultRow>(statement: Statement, prepared = true): Promise<pg.QueryResult<R>> {
    // Nothing more goes to a transaction known to have failed (ROLLBACK aside): it would only be refused.
    if (this.failure !== undefined && statement.text !== 'ROLLBACK') return Promise.reject(this.failure);
    if (mayWrite(statement.text)) this.wroteSomething = true;
    const answer = new Promise<pg.QueryResult<R>>((resolve, reject) => {
      if (this.gathered.length === 0) setImmediate(() => this.sendGathered());
      this.gathered.push({ statement, prepared, resolve: resolve as Exchange['resolve'], reject });
    });
    // Attached first, so the first failure is recorded before any caller's continuation sees a later one (the
    // statements the server skipped after it fail with SkippedAfterFailure, never recorded as the cause).
    answer.catch((error: unknown) => {
      this.failure ??= error instanceof SkippedAfterFailure ? error.failure : error;
    });
    return answer;
  }
}

const LOST = /Connection terminated|not queryable|Connection ended|ECONNRESET|EPIPE|socket hang up/i;

/**
 * True for an error that means the session is gone rather than that a statement failed: the connection broke, or
 * the server ended the session (SQLSTATE class 57P, operator intervention, or 08, connection exception).
 */
export function connectionLost(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = 'code' in error && typeof error.code === 'string' ? error.code : '';
  if (/^(57P|08)/.test(code) || ['ECONNRESET', 'EPIPE', 'ETIMEDOUT'].includes(code)) return true;
  return error instanceof Error && LOST.test(error.message);
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * Writes nobody reads back (INSERT, UPDATE, DELETE without RETURNING) are not waited for; anything else is sent
 * and waited for. Projections and a command's trailing writes go through it, so a command's tail costs no round trip
 * of its own: they travel with the next read or with COMMIT. A command alone sends them at once; a command sharing a
 * transaction with others holds them (`held`) until its work has succeeded, so that a command refused by its own
 * rule after appending has written nothing the others' transaction would have to undo. Reads through `writes` send
 * what is held first, so they see it.
 */
export class UnreadWrites implements Queryable {
  private pending: Statement[] = [];

  constructor(
    private readonly channel: TransactionChannel,
    private readonly held = false,
  ) {}

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
  ): Promise<pg.QueryResult<R>> {
    if (WRITE.test(text) && !RETURNING.test(text)) {
      this.send(text, values);
      return UNREAD as pg.QueryResult<R>;
    }
    this.flush();
    return this.channel.query<R>(text, values);
  }

  /**
   * A write whose result nobody reads, whatever its first word (a data-modifying WITH, say): sent with the next
   * statement that is read, as `query` sends a plain INSERT, UPDATE or DELETE. Its errors surface there or at COMMIT.
   */
  send(text: string, values: unknown[] = []): void {
    if (this.held) this.pending.push({ text, values });
    else this.channel.send(text, values);
  }

  /** Sends what is held, without waiting. */
  flush(): void {
    const pending = this.pending;
    this.pending = [];
    for (const statement of pending) this.channel.send(statement.text, statement.values);
  }
}

const WRITE = /^\s*(INSERT|UPDATE|DELETE)\b/i;
const RETURNING = /\bRETURNING\b/i;
const UNREAD = { command: 'UNREAD', rowCount: null, oid: 0, fields: [], rows: [] } as unknown as pg.QueryResult;

/**
 * Runs `work` in one transaction on a pipelined connection from the pool and commits. On any failure the
 * transaction is rolled back, and the connection is destroyed unless nothing unexpected happened on it. When the
 * connection was lost before COMMIT was sent (a pooled connection whose server process was ended, say), `work` runs
 * again on another connection: nothing of the failed attempt can have been committed. It does so until the pool has
 * had the chance to hand out every connection it held (each dead one is destroyed on the way), so a restart of the
 * server's processes costs no request. `work` must therefore do nothing but SQL through `tx` (and pure computation).
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (tx: PipelinedTransaction) => Promise<T>,
  opening: readonly Statement[] = [],
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    const tx = new PipelinedTransaction(client, opening);
    let unfit: Error | undefined;
    try {
      const result = await work(tx);
      await tx.commit();
      return result;
    } catch (error) {
      unfit = await tx.rollback();
      if (attempt <= retriesAfterLoss(pool) && tx.lostBeforeCommit) continue;
      throw error;
    } finally {
      client.release(unfit);
    }
  }
}

/** How often an operation that lost its connection before it could have changed anything runs again. */
export function retriesAfterLoss(pool: pg.Pool): number {
  return Math.min(pool.options.max ?? 10, 20);
}
