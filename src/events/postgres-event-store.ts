import type pg from 'pg';
import type { Projection } from '../projections/projection.js';
import { inTransaction } from '../storage/transaction.js';
import type { EventStore, StoreTransaction, TransactOptions } from './event-store.js';
import { applyProjections } from './apply-projections.js';
import { readAllWith, readStreamWith } from './event-rows.js';
import type { PersonalDataKeys, PersonOfStream } from './personal-data.js';
import { newStreamConflict, openingStatements, PostgresStoreTransaction } from './store-transaction.js';
import type { CommandContext, GlobalPosition, StoredEvent } from './types.js';

export { readAllWith, readStreamWith, toStoredEvent } from './event-rows.js';
export { applyProjections } from './apply-projections.js';

export interface PostgresEventStoreOptions {
  /**
   * Seal personal values with per-stream data keys (crypto-shredding, personal-data.ts) and open them on every read.
   * The service always sets it; without it events are stored as given (tests of the store alone, bench baselines).
   */
  personal?: PersonalDataKeys;
  /** Whom a new stream's data key is filed under; without it no stream gets a key. */
  personOf?: PersonOfStream;
  /** Prepare the transactions' statements by name (`TransactionOptions`): only when the pool is not a pooler's. */
  namedStatements?: boolean;
}

export class PostgresEventStore implements EventStore {
  private readonly commitListeners = new Set<() => void>();
  readonly personal: PersonalDataKeys | undefined;
  private readonly personOf: PersonOfStream | undefined;
  private readonly namedStatements: boolean;

  private readonly pool: pg.Pool;
  private readonly projections: readonly Projection[];
  constructor(pool: pg.Pool, projections: readonly Projection[], options: PostgresEventStoreOptions = {}) {
    this.pool = pool;
    this.projections = projections;
    this.personal = options.personal;
    this.personOf = options.personOf;
    this.namedStatements = options.namedStatements ?? false;
  }

  /**
   * One command in a transaction of its own: BEGIN, the opening and the stream locks, the command's work, the
   * projections of what it appended, COMMIT. A failure anywhere rolls back, and the connection is destroyed if a
   * statement failed (see inTransaction).
   */
  async transact<T>(
    context: CommandContext,
    streams: string[],
    work: (tx: StoreTransaction) => Promise<T>,
    options: TransactOptions = {},
  ): Promise<T> {
    let appended = 0;
    try {
      const result = await inTransaction(
        this.pool,
        async (sql) => {
          const tx = new PostgresStoreTransaction(sql, context, streams, this.personal, this.personOf);
          const value = await work(tx);
          if (tx.appended.length > 0) await applyProjections(sql, this.projections, tx.appended);
          appended = tx.appended.length;
          return value;
        },
        { opening: openingStatements(options.opening, streams), namedStatements: this.namedStatements },
      );
      if (appended > 0) this.announceCommit();
      return result;
    } catch (error) {
      throw newStreamConflict(error) ?? error;
    }
  }
  private announceCommit(): void {
    for (const listener of this.commitListeners) listener();
  }

  /**
   * Appends are not announced with NOTIFY: PostgreSQL serialises every notifying commit on one lock, which halved
   * concurrent append throughput. Subscribers in this process are woken here; other processes poll.
   */
  onCommit(listener: () => void): () => void {
    this.commitListeners.add(listener);
    return () => this.commitListeners.delete(listener);
  }

  readStream(streamId: string): Promise<StoredEvent[]> {
    return readStreamWith(this.pool, streamId, this.personal);
  }

  readAll(after: GlobalPosition, limit: number): Promise<StoredEvent[]> {
    return readAllWith(this.pool, after, limit, true, this.personal);
  }
}
