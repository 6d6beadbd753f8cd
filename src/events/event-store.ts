import type { Queryable, Statement } from '../storage/postgres.js';
import type {
  CommandContext,
  ExpectedRevision,
  GlobalPosition,
  NewEvent,
  RecordedEvent,
  StoredEvent,
} from './types.js';

export interface TransactOptions {
  /**
   * A statement run first inside the transaction, right after BEGIN and before the stream locks (a lead write's
   * registration, which readers must see before the transaction reads its time). Runs again on a retry.
   */
  opening?: Statement;
  /**
   * Lets the transaction share one database transaction with others of the same group that wait at the same time
   * (see TransactionCoalescer). Every command of a group must accept running beside the others: its locks are taken
   * together with theirs, its reads may see their locks held, and only one opening runs, the one of lowest
   * `openingRank`. Should the shared transaction fail, each command runs again alone.
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
  transact<T>(
    context: CommandContext,
    streams: string[],
    work: (tx: StoreTransaction) => Promise<T>,
    options?: TransactOptions,
  ): Promise<T>;
  readStream(streamId: string): Promise<StoredEvent[]>;
  /** Calls `listener` after every commit that appended events in this process (subscribers use it to wake). */
  onCommit(listener: () => void): () => void;
  /** Events strictly after `after`, in global order, that no still-running transaction can precede. */
  readAll(after: GlobalPosition, limit: number): Promise<StoredEvent[]>;
}

export interface StoreTransaction {
  readonly context: CommandContext;
  /**
   * The transaction's SQL connection, for read-model queries and writes that must commit with the events. BEGIN,
   * the opening and the stream locks travel with its first query.
   */
  readonly sql: Queryable;
  /**
   * For a command's trailing writes nobody reads back (quota counters, markers): sent at once without waiting for
   * their answer, so they travel with the next read or with COMMIT. A failure among them fails the transaction.
   */
  readonly writes: Queryable;
  /** True once BEGIN and the `opening` statement have been answered, that is after the transaction's first read. */
  readonly opened: boolean;
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
