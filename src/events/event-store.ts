import type { Queryable, Statement, Writer } from '../storage/postgres.js';
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
   * lead-sync gate, which it must hold before it reads its time). Runs again on a retry.
   */
  opening?: Statement;
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
   * The transaction's SQL connection, for read-model queries and writes that must commit with the events. The
   * server runs them after BEGIN, the opening and the stream locks.
   */
  readonly sql: Queryable;
  /** The same connection as `sql`, for a command's trailing writes (quota counters, markers, projections). */
  readonly writes: Writer;
  /**
   * Settles once BEGIN, the `opening` statement and the stream locks have been answered (rejecting with the first
   * failure). The work starts before that, its statements queued behind them on the server; what must follow them on
   * this side (a lead write reading its clock once it holds the gate) awaits this.
   */
  whenOpened(): Promise<void>;
  /** Sets the time the events appended from now on carry (for commands that read their clock after their first query). */
  setTime(now: Date): void;
  readStream(streamId: string): Promise<StoredEvent[]>;
  /**
   * Appends to a stream; a conflict with `expected` fails with WrongExpectedRevisionError. A new stream's events
   * (`no_stream`) are sent without waiting: an existing stream fails the transaction at its next query or COMMIT.
   */
  append(streamId: string, expected: ExpectedRevision, events: NewEvent[]): Promise<RecordedEvent[]>;
  /** Everything appended so far in this transaction. */
  readonly appended: readonly RecordedEvent[];
}
