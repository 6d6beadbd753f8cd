import type { Queryable, Statement } from '../storage/postgres.js';
import type { SqlRunner } from '../storage/write-batch.js';
import type { CommandContext, ExpectedRevision, GlobalPosition, NewEvent, RecordedEvent, StoredEvent } from './types.js';

export interface TransactOptions {
  /**
   * A statement run first inside the transaction, right after BEGIN and in the same round trip (a lead write's
   * registration, which readers must see before the transaction reads its time). Runs again on a retry.
   */
  opening?: Statement;
  /**
   * Lets the transaction share one database transaction with others of the same group that wait at the same time
   * (see TransactionCoalescer). Every command of a group must accept running beside the others: its locks are taken
   * together with theirs, its reads may see their locks held, and only one opening runs, the one of lowest `openingRank`.
   * Should the shared transaction fail, each command runs again alone.
   */
  coalesce?: string;
  /** Which opening a shared transaction runs: the lowest. */
  openingRank?: number;
}

/**
 * The event-store seam. The PostgreSQL adapter is the only one today; an EventStoreDB adapter would implement
 * the same calls (its read models would then be fed by a subscription instead of inside the transaction).
 */
export interface EventStore {
  /**
   * Runs a command in one transaction: locks the named streams, lets `work` read and append, applies the inline
   * projections to what was appended, and commits. Appends to a stream not named must come before any other write.
   */
  transact<T>(context: CommandContext, streams: string[], work: (tx: StoreTransaction) => Promise<T>, options?: TransactOptions): Promise<T>;
  readStream(streamId: string): Promise<StoredEvent[]>;
  /** True while transactions of a `coalesce` group run or wait: a command arriving now would not run alone at once. */
  busy(group: string): boolean;
  /** Calls `listener` after every commit that appended events in this process (subscribers use it to wake). */
  onCommit(listener: () => void): () => void;
  /** Events strictly after `after`, in global order, that no still-running transaction can precede. */
  readAll(after: GlobalPosition, limit: number): Promise<StoredEvent[]>;
}

export interface StoreTransaction {
  readonly context: CommandContext;
  /**
   * The transaction's SQL connection, for read-model queries and writes that must commit with the events. BEGIN and
   * the stream locks go to the server with its first query.
   */
  readonly sql: Queryable;
  /**
   * For a command's trailing writes nobody reads back (quota counters, markers): they go to the server with the
   * next read, or with the projections' writes and COMMIT, in one round trip. Reads through `sql` do not see them.
   */
  readonly writes: SqlRunner;
  /** True once BEGIN (and the `opening` statement) have reached the server, that is after the transaction's first query. */
  readonly opened: boolean;
  /**
   * Queues a statement that fails the transaction by raising an error, sent ahead of the writes that follow it
   * (with the next read or with COMMIT).
   */
  check(statement: Statement): void;
  /** Sets the time the events appended from now on carry (for commands that read their clock after their first query). */
  setTime(now: Date): void;
  readStream(streamId: string): Promise<StoredEvent[]>;
  /**
   * Appends to a stream. A new stream's first events (`no_stream`) are written with the transaction's trailing
   * writes and COMMIT; a conflict then fails the commit with WrongExpectedRevisionError.
   */
  append(streamId: string, expected: ExpectedRevision, events: NewEvent[]): Promise<RecordedEvent[]>;
  /** Everything appended so far in this transaction. */
  readonly appended: readonly RecordedEvent[];
}
