import type { Sql } from '../storage/postgres.js';
import type { SqlRunner } from '../storage/write-batch.js';
import type { CommandContext, ExpectedRevision, GlobalPosition, NewEvent, StoredEvent } from './types.js';

/**
 * The event-store seam. The PostgreSQL adapter is the only one today; an EventStoreDB adapter would implement
 * the same calls (its read models would then be fed by a subscription instead of inside the transaction).
 */
export interface EventStore {
  /**
   * Runs a command in one transaction: locks the named streams, lets `work` read and append, applies the inline
   * projections to what was appended, and commits. Appends to a stream not named must come before any other write.
   */
  transact<T>(context: CommandContext, streams: string[], work: (tx: StoreTransaction) => Promise<T>): Promise<T>;
  readStream(streamId: string): Promise<StoredEvent[]>;
  /** Calls `listener` after every commit that appended events in this process (subscribers use it to wake). */
  onCommit(listener: () => void): () => void;
  /** Events strictly after `after`, in global order, that no still-running transaction can precede. */
  readAll(after: GlobalPosition, limit: number): Promise<StoredEvent[]>;
}

export interface StoreTransaction {
  readonly context: CommandContext;
  /** The transaction's SQL connection, for read-model queries and writes that must commit with the events. */
  readonly sql: Sql;
  /**
   * For a command's trailing writes nobody reads back (quota counters, markers): they go to the server with the
   * projections' writes and COMMIT, in one round trip. Reads through `sql` do not see them.
   */
  readonly writes: SqlRunner;
  readStream(streamId: string): Promise<StoredEvent[]>;
  append(streamId: string, expected: ExpectedRevision, events: NewEvent[]): Promise<StoredEvent[]>;
  /** Everything appended so far in this transaction. */
  readonly appended: readonly StoredEvent[];
}
