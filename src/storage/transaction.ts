import pg from 'pg';
import { BatchingClient } from './batching-client.js';
import type { Statement, Writer } from './postgres.js';

/** COMMIT answered ROLLBACK: the transaction had failed, though no statement's own error reached us. */
export class TransactionRolledBack extends Error {
  constructor() {
    super('The transaction was rolled back by the server instead of committed');
    this.name = 'TransactionRolledBack';
  }
}

/**
 * The connection was lost after COMMIT was sent while the server still answers: the transaction may have committed or
 * not. Not a fault to retry blindly (it could be written twice), so not an outage either (src/storage/outage.ts): the
 * request answers 500.
 */
export class CommitOutcomeUnknown extends Error {
  constructor(cause: unknown) {
    super('The connection was lost after COMMIT was sent; the transaction may or may not have committed', { cause });
    this.name = 'CommitOutcomeUnknown';
  }
}

/**
 * One transaction's connection. Statements go through pg's `client.query` with their values as bind parameters.
 * Once one has failed, nothing more is sent (the server would refuse it): every later query gets that first failure.
 * On a `BatchingClient` the statements submitted in one turn leave in one write.
 */
export class Transaction implements Writer {
  private failure: unknown = undefined;
  private readonly sent: Promise<unknown>[] = [];
  private opening: Promise<void> = Promise.resolve();

  private readonly client: pg.PoolClient;
  private readonly named;
  constructor(client: pg.PoolClient, named = false) {
    this.client = client;
    this.named = named;
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
  ): Promise<pg.QueryResult<R>> {
    if (this.failure !== undefined) throw this.failure;
    if (this.client instanceof BatchingClient) this.client.holdWrites();
    try {
      return await this.client.query<R>(queryConfig(text, values, this.named));
    } catch (error) {
      // Pipelined statements after a failed one fail too ("transaction is aborted"): the first failure is the cause.
      if (this.failure === undefined) this.failure = error;
      throw this.failure;
    }
  }

  /**
   * Sends a write whose answer nobody reads, without waiting for it: on a pipelining client it leaves with what
   * follows in the same turn (COMMIT, say). Its failure is the transaction's: the next query or COMMIT reports it.
   */
  send(text: string, values: unknown[] = []): void {
    this.sent.push(this.query(text, values).catch(() => undefined));
  }

  /** Waits for the answers of the statements sent without waiting, and throws the transaction's first failure. */
  async settled(): Promise<void> {
    await Promise.all(this.sent.splice(0));
    if (this.failure !== undefined) throw this.failure;
  }

  /** The first statement's failure, if any. */
  get failed(): unknown {
    return this.failure;
  }

  /**
   * Settles once BEGIN and the opening statements have been answered (rejecting with the first failure). On a
   * pipelining client the work starts before that, its statements queued behind them; what must follow the opening
   * on this side (reading the clock after a lock is held) waits for this.
   */
  whenOpened(): Promise<void> {
    return this.opening;
  }

  /** Set by inTransaction to BEGIN and the opening in flight. */
  opens(opening: Promise<void>): void {
    // Observed here: a work that fails first (with the same error) leaves it to inTransaction, which awaits it too.
    opening.catch(() => undefined);
    this.opening = opening;
  }
}

/**
 * The name a statement is prepared under on every connection that runs it: one per distinct text, so a name never
 * stands for two texts (values are always bind parameters, so the texts are the code's own and few).
 */
const statementNames = new Map<string, string>();
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `vcrm_${statementNames.size + 1}`;
    statementNames.set(text, name);
  }
  return name;
}

/** A statement as pg takes it: prepared under its text's name when `named`, else unnamed (planned at each run). */
export function queryConfig(text: string, values: unknown[], named: boolean): pg.QueryConfig {
  return named ? { name: statementName(text), text, values } : { text, values };
}

export interface TransactionOptions {
  /** Statements the transaction runs right after BEGIN. */
  opening?: readonly Statement[];
  /**
   * Prepare each statement once per connection (pg's named statements), so the server parses and plans it once
   * rather than at every run. Only for connections straight to PostgreSQL: a transaction pooler hands each
   * transaction a different server session, where the name is unknown (PgBouncer before 1.21).
   */
  namedStatements?: boolean;
}

/**
 * Runs `work` in one READ COMMITTED transaction on a connection from the pool: BEGIN, then `opening` (statements the
 * transaction runs first), then `work`, then COMMIT. On any failure it rolls back. On a pool whose clients pipeline
 * (`createPool`), BEGIN, the opening and the statements `work` sends in its first turn leave together, one round trip
 * rather than one each (`work` starts before the opening is answered: `tx.whenOpened()` waits for it), and the writes
 * `work` sent without waiting (`tx.send`) leave with COMMIT: if one of them failed, its error is reported, not the
 * commit.
 *
 * A connection on which a statement failed (or whose ROLLBACK failed) is destroyed with pg's `release(error)`, never
 * returned to the pool: whatever state the failure left it in cannot reach the next caller.
 *
 * When the connection was lost before COMMIT was sent (a pooled connection whose server process was ended, say),
 * nothing can have been committed, so `work` runs again on another connection, until the pool has had the chance to
 * hand out every connection it held. `work` must therefore do nothing but SQL through `tx` (and pure computation).
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (tx: Transaction) => Promise<T>,
  options: TransactionOptions = {},
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    const tx = new Transaction(client, options.namedStatements);
    let commitSent = false;
    let unfit: Error | undefined;
    try {
      tx.opens(begin(tx, client, options.opening ?? []));
      // On a pipelining client the work's first statements leave with BEGIN and the opening (one round trip; the
      // server runs them in order); one statement at a time, BEGIN must be answered before anything else is sent.
      if (!client.pipeline) await tx.whenOpened();
      const result = await work(tx);
      await tx.whenOpened();
      // A statement failed though `work` went on: the server would answer COMMIT with ROLLBACK.
      if (tx.failed !== undefined) throw tx.failed;
      commitSent = true;
      // COMMIT leaves with the writes sent without waiting; if one of them failed, the server rolls back instead.
      const committed = (await tx.query('COMMIT')).command === 'COMMIT';
      await tx.settled();
      if (!committed) throw new TransactionRolledBack();
      return result;
    } catch (error) {
      unfit = await rollBack(tx, error);
      if (!commitSent && connectionLost(tx.failed) && attempt <= retriesAfterLoss(pool)) continue;
      if (commitSent && connectionLost(error) && (await serverAnswers(pool))) throw new CommitOutcomeUnknown(error);
      throw error;
    } finally {
      client.release(unfit);
    }
  }
}

/** BEGIN and the opening statements: sent together when the client pipelines, else one after another. */
async function begin(tx: Transaction, client: pg.PoolClient, opening: readonly Statement[]): Promise<void> {
  if (client.pipeline) {
    // Every one is awaited, so none fails unobserved; the first failure is what `tx` reports from then on.
    await Promise.allSettled([tx.query('BEGIN'), ...opening.map((s) => tx.query(s.text, s.values))]);
    if (tx.failed !== undefined) throw tx.failed;
    return;
  }
  await tx.query('BEGIN');
  for (const statement of opening) await tx.query(statement.text, statement.values);
}

/** Ends a failed transaction; returns why the connection must be destroyed, or undefined when it is fit for reuse. */
async function rollBack(tx: Transaction, error: unknown): Promise<Error | undefined> {
  if (error instanceof TransactionRolledBack) return error;
  // A work that failed before the opening was answered: whether one of those statements failed decides the connection.
  await tx.whenOpened().catch(() => undefined);
  if (tx.failed !== undefined) return asError(tx.failed);
  try {
    await tx.query('ROLLBACK');
    return undefined;
  } catch (failure) {
    return asError(failure);
  }
}

/** How long the check below waits for the server: one that does not answer in that time is treated as down. */
const ANSWER_WITHIN_MS = 2_000;

/**
 * Whether the server still takes connections: after a loss at COMMIT, tells a session ended alone (a terminated
 * backend: the outcome is unknown, `CommitOutcomeUnknown`) from an outage (the server stopping, where the loss is
 * answered as the outage it is, 503). Asked on a new session, not a pooled one: a stopping server refuses new
 * sessions from the moment it begins to stop, while a pooled session whose process has not reached its stop signal
 * yet can still answer: the likeliest cause of the one 500 a restart under load answered on 2026-11-28.
 */
async function serverAnswers(pool: pg.Pool): Promise<boolean> {
  const { Client: _pooledClass, ...settings } = pool.options;
  const client = new pg.Client({
    ...settings,
    connectionTimeoutMillis: ANSWER_WITHIN_MS,
    query_timeout: ANSWER_WITHIN_MS,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** How often an operation that lost its connection before it could have changed anything runs again. */
export function retriesAfterLoss(pool: pg.Pool): number {
  return Math.min(pool.options.max ?? 10, 20);
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

/** A thrown value as an Error (pg's `release` takes an Error to destroy the connection). */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
