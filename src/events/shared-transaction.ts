import type pg from 'pg';
import type { Statement } from '../storage/postgres.js';
import { TransactionSql, type TransactionChannel } from '../storage/transaction-sql.js';
import { mayWrite } from '../storage/write-batch.js';

/**
 * Thrown to a command sharing a database transaction when that transaction cannot go on: a statement failed, or a
 * command needs something only a transaction of its own gives. Every command of it then runs again alone.
 */
export class SharedTransactionAbandoned extends Error {
  constructor(reason: string, options?: ErrorOptions) {
    super(`The shared transaction was abandoned: ${reason}`, options);
    this.name = 'SharedTransactionAbandoned';
  }
}

interface Submission {
  statements: readonly Statement[];
  resolve(results: pg.QueryResult[]): void;
  reject(error: unknown): void;
}

/**
 * One database transaction that several commands (its members) run in. A member's query waits until every member
 * still running waits on one too; then all of them go to the server in one round trip, BEGIN, the opening and the
 * locks first. N commands so cost two or three round trips, one BEGIN and one COMMIT in all.
 */
export class SharedTransaction {
  /** The connection, which sends BEGIN, the opening and the locks with the first round trip. */
  private readonly sql: TransactionSql;
  private pending: Submission[] = [];
  private running: number;
  private failure: unknown = undefined;

  constructor(client: pg.PoolClient, opening: Statement[], members: number) {
    this.sql = new TransactionSql(client, opening);
    this.running = members;
  }

  get opened(): boolean {
    return this.sql.opened;
  }

  get wrote(): boolean {
    return this.sql.wrote;
  }

  /** True once a round trip failed: the transaction is aborted on the server. */
  get failed(): boolean {
    return this.failure !== undefined;
  }

  /** A member's view of the connection. */
  member(): MemberChannel {
    return new MemberChannel(this);
  }

  submit(statements: readonly Statement[]): Promise<pg.QueryResult[]> {
    if (this.failure !== undefined) return Promise.reject(new SharedTransactionAbandoned('an earlier round trip failed', { cause: this.failure }));
    return new Promise((resolve, reject) => {
      this.pending.push({ statements, resolve, reject });
      this.flushWhenAllWait();
    });
  }

  /** A member's work has settled: it sends nothing more, so the others no longer wait for it. */
  memberDone(): void {
    this.running -= 1;
    this.flushWhenAllWait();
  }

  /** Sends the members' trailing writes and COMMIT (with the opening if nothing was sent before). */
  async commit(writes: readonly Statement[]): Promise<void> {
    await this.send([...writes, { text: 'COMMIT', values: [] }]);
  }

  private flushWhenAllWait(): void {
    if (this.pending.length === 0 || this.pending.length < this.running) return;
    const batch = this.pending;
    this.pending = [];
    this.send(batch.flatMap((s) => s.statements)).then(
      (results) => {
        let at = 0;
        for (const submission of batch) {
          submission.resolve(results.slice(at, at + submission.statements.length));
          at += submission.statements.length;
        }
      },
      (error: unknown) => {
        for (const submission of batch) submission.reject(new SharedTransactionAbandoned('a statement failed', { cause: error }));
      },
    );
  }

  private async send(statements: readonly Statement[]): Promise<pg.QueryResult[]> {
    try {
      return await this.sql.runScriptResults(statements);
    } catch (error) {
      this.failure ??= error;
      throw error;
    }
  }
}

/** What one member of a shared transaction sends its SQL through. */
export class MemberChannel implements TransactionChannel {
  private sentWrite = false;

  constructor(private readonly shared: SharedTransaction) {}

  get opened(): boolean {
    return this.shared.opened;
  }

  /** True once any member sent a statement that may write (this transaction then has its id). */
  get wrote(): boolean {
    return this.shared.wrote;
  }

  /** True once this member sent a statement that may write: its failure then spoils the others' transaction. */
  get memberWrote(): boolean {
    return this.sentWrite;
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    return this.runScript<R>([{ text, values }]);
  }

  async runScript<R extends pg.QueryResultRow = pg.QueryResultRow>(statements: readonly Statement[]): Promise<pg.QueryResult<R>> {
    if (statements.some((s) => mayWrite(s.text))) this.sentWrite = true;
    const results = await this.shared.submit(statements);
    return results[results.length - 1] as pg.QueryResult<R>;
  }
}
