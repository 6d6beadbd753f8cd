import type pg from 'pg';
import type { Projection } from '../projections/projection.js';
import { inTransaction } from '../storage/pipeline.js';
import type { EventStore, StoreTransaction, TransactOptions } from './event-store.js';
import { applyProjections } from './apply-projections.js';
import { readAllWith, readStreamWith } from './event-rows.js';
import { runShared, type Waiting } from './shared-transaction.js';
import { registerPersonalDataKeys, type PersonalDataKeys } from './personal-data.js';
import { newStreamConflict, openingStatements, PostgresStoreTransaction } from './store-transaction.js';
import { TransactionCoalescer, type CoalescerLimits } from './transaction-coalescer.js';
import type { CommandContext, GlobalPosition, StoredEvent } from './types.js';

export { readAllWith, readStreamWith, toStoredEvent } from './event-rows.js';
export { applyProjections } from './apply-projections.js';

export interface PostgresEventStoreOptions {
  /** How transactions with `coalesce` share database transactions (see TransactionCoalescer). */
  coalescing?: CoalescerLimits;
  /**
   * False only for bench:append's baseline: events then carry 32 zero bytes instead of their chained hash (see
   * chain.ts), which `audit verify` reports as broken. Never turn it off in the service.
   */
  chained?: boolean;
  /**
   * Seal personal values with per-stream data keys (crypto-shredding, personal-data.ts) and open them on every read.
   * The service always sets it; without it events are stored as given (tests of the store alone, bench baselines).
   */
  personal?: PersonalDataKeys;
}

/** Two shared transactions at once per group: one at the server while the next one's commands gather. */
export const DEFAULT_COALESCING: CoalescerLimits = { maxActive: 2, maxItems: 32 };

export class PostgresEventStore implements EventStore {
  private readonly commitListeners = new Set<() => void>();
  private readonly coalescer: TransactionCoalescer<Waiting>;
  private readonly chained: boolean;
  readonly personal: PersonalDataKeys | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly projections: readonly Projection[],
    options: PostgresEventStoreOptions = {},
  ) {
    this.chained = options.chained ?? true;
    this.personal = options.personal;
    if (options.personal) registerPersonalDataKeys(pool, options.personal);
    this.coalescer = new TransactionCoalescer(
      (items) =>
        runShared(items, {
          pool,
          projections,
          chained: this.chained,
          keys: this.personal,
          alone: (item) => this.transactAlone(item),
          announce: () => this.announceCommit(),
        }),
      options.coalescing ?? DEFAULT_COALESCING,
    );
  }

  transact<T>(
    context: CommandContext,
    streams: string[],
    work: (tx: StoreTransaction) => Promise<T>,
    options: TransactOptions = {},
  ): Promise<T> {
    if (options.coalesce === undefined) return this.transactAlone({ context, streams, work, options });
    const group = options.coalesce;
    return new Promise<T>((resolve, reject) => {
      this.coalescer.submit(group, {
        context,
        streams,
        locks: streams,
        work,
        options,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
    });
  }

  /** How many commands with `coalesce: group` wait for a transaction to start in (for monitoring and tests). */
  waitingToCoalesce(group: string): number {
    return this.coalescer.waiting(group);
  }

  /** Commands waiting for a shared transaction and shared transactions running, over every group (for metrics). */
  sharedTransactionLoad(): { waiting: number; active: number } {
    return this.coalescer.load();
  }

  /**
   * One command in a transaction of its own. BEGIN, the opening and the stream locks go to the server at once and
   * travel with the command's first query; its trailing writes, the projections' writes and COMMIT travel together.
   * A failure anywhere rolls back, and the connection is destroyed if a statement failed (see inTransaction).
   */
  private async transactAlone<T>(item: Pick<Waiting<T>, 'context' | 'streams' | 'work' | 'options'>): Promise<T> {
    let appended = 0;
    try {
      const result = await inTransaction(
        this.pool,
        async (sql) => {
          const tx = new PostgresStoreTransaction(sql, item.context, item.streams, false, this.chained, this.personal);
          const value = await item.work(tx);
          if (tx.appended.length > 0) await applyProjections(tx.writes, this.projections, tx.appended);
          appended = tx.appended.length;
          return value;
        },
        openingStatements(item.options.opening, item.streams),
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
