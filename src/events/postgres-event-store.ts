import type pg from 'pg';
import type { Projection } from '../projections/projection.js';
import { PgCode, pgConstraint, pgErrorCode, type Queryable, type Statement } from '../storage/postgres.js';
import { TransactionSql, type TransactionChannel } from '../storage/transaction-sql.js';
import { WriteBatch, type SqlRunner } from '../storage/write-batch.js';
import type { EventStore, StoreTransaction, TransactOptions } from './event-store.js';
import {
  WrongExpectedRevisionError,
  type CommandContext,
  type ExpectedRevision,
  type GlobalPosition,
  type NewEvent,
  type RecordedEvent,
  type StoredEvent,
} from './types.js';
import { newId } from '../shared/ids.js';
import { SharedTransaction, SharedTransactionAbandoned } from './shared-transaction.js';
import { TransactionCoalescer, type CoalescerLimits } from './transaction-coalescer.js';

interface EventRow {
  id: string;
  stream_id: string;
  revision: number;
  type: string;
  tenant_id: string;
  sandbox: boolean;
  data: Record<string, unknown>;
  metadata: StoredEvent['metadata'];
  created_at: Date;
  tx_id: string;
  position: number;
}

const COLUMNS = 'id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at, tx_id::text AS tx_id, position';

export function toStoredEvent(row: EventRow): StoredEvent {
  return {
    id: row.id,
    streamId: row.stream_id,
    revision: row.revision,
    type: row.type,
    tenantId: row.tenant_id,
    sandbox: row.sandbox,
    data: row.data,
    metadata: row.metadata,
    createdAt: row.created_at,
    position: { txId: row.tx_id, position: row.position },
  };
}

export async function readStreamWith(sql: Queryable, streamId: string): Promise<StoredEvent[]> {
  const result = await sql.query<EventRow>(`SELECT ${COLUMNS} FROM events WHERE stream_id = $1 ORDER BY revision`, [streamId]);
  return result.rows.map(toStoredEvent);
}

/** Reads the log in global order. Only rows of transactions older than every running one are visible, so no later commit can slot in behind. */
export async function readAllWith(sql: Queryable, after: GlobalPosition, limit: number, onlySettled = true): Promise<StoredEvent[]> {
  const settled = onlySettled ? 'AND tx_id < pg_snapshot_xmin(pg_current_snapshot())' : '';
  const result = await sql.query<EventRow>(
    `SELECT ${COLUMNS} FROM events
      WHERE (tx_id, position) > ($1::xid8, $2::bigint) ${settled}
      ORDER BY tx_id, position
      LIMIT $3`,
    [after.txId, after.position, limit],
  );
  return result.rows.map(toStoredEvent);
}

/** Stream locks: transaction-scoped advisory locks keyed by the stream id's 64-bit hash, taken in one sorted order. */
function lockStatement(streams: string[]): Statement | null {
  const sorted = [...new Set(streams)].sort();
  if (sorted.length === 0) return null;
  return { text: 'SELECT pg_advisory_xact_lock(hashtextextended(s, 0)) FROM unnest($1::text[]) AS s ORDER BY s', values: [sorted] };
}

const NEW_STREAM_CONFLICT = /^Key \(stream_id, revision\)=\((.*), \d+\) already exists/;

/** BEGIN, the opening statement and the stream locks: what a transaction sends before its first query. */
function openingStatements(first: Statement | undefined, streams: string[]): Statement[] {
  const lock = lockStatement(streams);
  return [{ text: 'BEGIN', values: [] }, ...(first ? [first] : []), ...(lock ? [lock] : [])];
}

class PostgresStoreTransaction implements StoreTransaction {
  readonly appended: RecordedEvent[] = [];
  readonly writes: WriteBatch;
  private readonly locked = new Set<string>();
  private now: Date;

  /** `shared`: the transaction is one command's part of a transaction shared with others. */
  constructor(
    readonly sql: TransactionChannel,
    private readonly baseContext: CommandContext,
    streams: string[],
    private readonly shared: boolean,
  ) {
    this.writes = new WriteBatch(this.sql);
    for (const stream of streams) this.locked.add(stream);
    this.now = baseContext.now;
  }

  get context(): CommandContext {
    return { ...this.baseContext, now: this.now };
  }

  get opened(): boolean {
    return this.sql.opened;
  }

  check(statement: Statement): void {
    this.writes.defer(statement);
  }

  setTime(now: Date): void {
    if (this.appended.length > 0) throw new Error('The time of a transaction is set before its first append');
    this.now = now;
  }

  private async lock(streams: string[]): Promise<void> {
    const statement = lockStatement(streams);
    // Through `sql`, not `writes`: waiting writes would take a transaction id before the lock is held.
    if (statement) await this.sql.query(statement.text, statement.values);
    for (const stream of streams) this.locked.add(stream);
  }

  readStream(streamId: string): Promise<StoredEvent[]> {
    return readStreamWith(this.sql, streamId);
  }

  async append(streamId: string, expected: ExpectedRevision, events: NewEvent[]): Promise<RecordedEvent[]> {
    if (events.length === 0) return [];
    if (expected === 'no_stream') return this.appendNewStream(streamId, events);
    if (!this.locked.has(streamId)) {
      // Locking after a write would let this transaction's id sort before a commit it has already seen.
      if (this.appended.length > 0) throw new Error(`Stream ${streamId} must be named when the transaction starts`);
      if (this.sql.wrote) {
        if (this.shared) throw new SharedTransactionAbandoned(`stream ${streamId} is locked after another command of the transaction wrote`);
        throw new Error(`Stream ${streamId} must be named when the transaction starts`);
      }
      await this.lock([streamId]);
    }
    const { tenantId, sandbox, metadata } = this.baseContext;
    const expectedCurrent = expected === 'any' ? null : expected;
    const ids = events.map((event) => event.id ?? newId());
    let rows: EventRow[];
    try {
      // One round trip: the current revision, the expectation check and the insert.
      const result = await this.writes.query<EventRow>(
        `WITH current AS (SELECT coalesce(max(revision), -1) AS revision FROM events WHERE stream_id = $2)
         INSERT INTO events (id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at)
         SELECT e.id, $2, current.revision + e.ord, e.type, $3, $4, e.data, $5, $6
           FROM current, unnest($1::uuid[], $7::text[], $8::jsonb[]) WITH ORDINALITY AS e(id, type, data, ord)
          WHERE $9::integer IS NULL OR current.revision = $9::integer
         RETURNING ${COLUMNS}`,
        [ids, streamId, tenantId, sandbox, JSON.stringify(metadata), this.now, events.map((e) => e.type), events.map((e) => JSON.stringify(e.data)), expectedCurrent],
      );
      rows = result.rows;
    } catch (error) {
      // Another writer's event took the revision (the aborted transaction can no longer read which one is current).
      if (pgErrorCode(error) === PgCode.uniqueViolation && pgConstraint(error) === 'events_stream_revision') throw new WrongExpectedRevisionError(streamId, expected, 'unknown');
      throw error;
    }
    if (rows.length === 0) throw new WrongExpectedRevisionError(streamId, expected, await this.currentRevision(streamId));
    const stored = rows.map(toStoredEvent).sort((a, b) => a.revision - b.revision);
    this.appended.push(...stored);
    return stored;
  }

  /**
   * A new stream's events need nothing read back: their revisions are 0, 1, …, and the unique (stream_id, revision)
   * refuses them at COMMIT if the stream exists (no lock needed: any other writer of the stream fails the same way).
   */
  private async appendNewStream(streamId: string, events: NewEvent[]): Promise<RecordedEvent[]> {
    const { tenantId, sandbox, metadata } = this.baseContext;
    const recorded: RecordedEvent[] = events.map((event, revision) => ({
      id: event.id ?? newId(),
      streamId,
      revision,
      type: event.type,
      tenantId,
      sandbox,
      data: event.data,
      metadata,
      createdAt: this.now,
    }));
    const rows = recorded.map((_, i) => `($${i * 5 + 1}::uuid, $${i * 5 + 2}, $${i * 5 + 3}::integer, $${i * 5 + 4}, $${i * 5 + 5}::jsonb, $${recorded.length * 5 + 1}::uuid, $${recorded.length * 5 + 2}::boolean, $${recorded.length * 5 + 3}::jsonb, $${recorded.length * 5 + 4}::timestamptz)`);
    await this.writes.query(
      `INSERT INTO events (id, stream_id, revision, type, data, tenant_id, sandbox, metadata, created_at) VALUES ${rows.join(', ')}`,
      [...recorded.flatMap((e) => [e.id, streamId, e.revision, e.type, JSON.stringify(e.data)]), tenantId, sandbox, JSON.stringify(metadata), this.now],
    );
    this.appended.push(...recorded);
    return recorded;
  }

  private async currentRevision(streamId: string): Promise<number | 'no_stream'> {
    const result = await this.sql.query<{ revision: number | null }>('SELECT max(revision) AS revision FROM events WHERE stream_id = $1', [streamId]).catch(() => undefined);
    return result?.rows[0]?.revision ?? 'no_stream';
  }
}

/** Rolls the connection's transaction back; returns the error if that failed (the connection is then lost). */
async function rollBack(client: pg.PoolClient): Promise<Error | undefined> {
  try {
    await client.query('ROLLBACK');
    return undefined;
  } catch (lost) {
    return lost instanceof Error ? lost : new Error(String(lost));
  }
}

/** True for an error the server reported with severity ERROR: the transaction was rolled back. */
function rolledBack(error: unknown): boolean {
  return pgErrorCode(error) !== undefined && typeof error === 'object' && error !== null && 'severity' in error && error.severity === 'ERROR';
}

/** A new stream's events refused at COMMIT because the stream already exists: the command may retry and decide again. */
function newStreamConflict(error: unknown): WrongExpectedRevisionError | undefined {
  if (pgErrorCode(error) !== PgCode.uniqueViolation || pgConstraint(error) !== 'events_stream_revision') return undefined;
  const detail = typeof error === 'object' && error !== null && 'detail' in error ? String(error.detail) : '';
  return new WrongExpectedRevisionError(NEW_STREAM_CONFLICT.exec(detail)?.[1] ?? 'unknown', 'no_stream', 'unknown');
}

interface Waiting {
  context: CommandContext;
  streams: string[];
  locks: string[];
  work: (tx: StoreTransaction) => Promise<unknown>;
  options: TransactOptions;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export interface PostgresEventStoreOptions {
  /** How transactions with `coalesce` share database transactions (see TransactionCoalescer). */
  coalescing?: CoalescerLimits;
}

/** Two shared transactions at once per group: one at the server while the next one's commands gather. */
export const DEFAULT_COALESCING: CoalescerLimits = { maxActive: 2, maxItems: 32 };

export class PostgresEventStore implements EventStore {
  private readonly commitListeners = new Set<() => void>();
  private readonly coalescer: TransactionCoalescer<Waiting>;

  constructor(
    private readonly pool: pg.Pool,
    private readonly projections: readonly Projection[],
    options: PostgresEventStoreOptions = {},
  ) {
    this.coalescer = new TransactionCoalescer((items) => this.runShared(items), options.coalescing ?? DEFAULT_COALESCING);
  }

  transact<T>(context: CommandContext, streams: string[], work: (tx: StoreTransaction) => Promise<T>, options: TransactOptions = {}): Promise<T> {
    if (options.coalesce === undefined) return this.transactAlone(context, streams, work, options);
    const group = options.coalesce;
    return new Promise<T>((resolve, reject) => {
      this.coalescer.submit(group, { context, streams, locks: streams, work, options, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  busy(group: string): boolean {
    return this.coalescer.busy(group);
  }

  /** How many commands with `coalesce: group` wait for a transaction to start in (for monitoring and tests). */
  waitingToCoalesce(group: string): number {
    return this.coalescer.waiting(group);
  }

  private async transactAlone<T>(context: CommandContext, streams: string[], work: (tx: StoreTransaction) => Promise<T>, options: TransactOptions): Promise<T> {
    const client = await this.pool.connect();
    let sql: TransactionSql | undefined;
    let broken: Error | undefined;
    try {
      sql = new TransactionSql(client, openingStatements(options.opening, streams));
      const tx = new PostgresStoreTransaction(sql, context, streams, false);
      const result = await work(tx);
      if (tx.appended.length > 0) await applyProjections(tx.writes, this.projections, tx.appended);
      await tx.writes.commit();
      if (tx.appended.length > 0) this.announceCommit();
      return result;
    } catch (error) {
      if (sql?.opened) broken = await rollBack(client);
      throw newStreamConflict(error) ?? error;
    } finally {
      // A connection that failed under a query is dropped, not handed to the next caller.
      client.release(broken);
    }
  }

  /**
   * Runs waiting commands in one database transaction. Should it fail as a whole (a statement failed, COMMIT was
   * refused, or a command that had written failed), it is rolled back and every command runs again alone, where
   * its own errors and retries apply.
   */
  private async runShared(items: Waiting[]): Promise<void> {
    const alone = (item: Waiting) => this.transactAlone(item.context, item.streams, item.work, item.options).then(item.resolve, item.reject);
    if (items.length === 1) return alone(items[0]!);
    let outcomes: Outcome[] | undefined;
    try {
      outcomes = await this.tryShared(items);
    } catch {
      outcomes = undefined;
    }
    if (!outcomes) {
      await Promise.all(items.map(alone));
      return;
    }
    outcomes.forEach((outcome, i) => (outcome.ok ? items[i]!.resolve(outcome.value) : items[i]!.reject(outcome.error)));
  }

  /** The commands' outcomes once their shared transaction committed, or undefined when it was abandoned (and rolled back). */
  private async tryShared(items: Waiting[]): Promise<Outcome[] | undefined> {
    const client = await this.pool.connect();
    let shared: SharedTransaction | undefined;
    let broken: Error | undefined;
    try {
      // One opening runs: the one of the lowest rank (a lead write's registration with the earliest time).
      const first = items.filter((i) => i.options.opening).sort((a, b) => (a.options.openingRank ?? 0) - (b.options.openingRank ?? 0))[0]?.options.opening;
      shared = new SharedTransaction(client, openingStatements(first, [...new Set(items.flatMap((i) => i.streams))]), items.length);
      const sharedTx = shared;
      const members = items.map((item) => {
        const channel = sharedTx.member();
        return { channel, tx: new PostgresStoreTransaction(channel, item.context, item.streams, true) };
      });
      const outcomes = await Promise.all(
        items.map(async (item, i): Promise<Outcome> => {
          try {
            return { ok: true, value: await item.work(members[i]!.tx) };
          } catch (error) {
            return { ok: false, error };
          } finally {
            sharedTx.memberDone();
          }
        }),
      );
      const spoiled = outcomes.some((o, i) => !o.ok && (o.error instanceof SharedTransactionAbandoned || members[i]!.channel.memberWrote));
      if (shared.failed || spoiled) throw new SharedTransactionAbandoned('a command failed after writing');
      const writes: Statement[] = [];
      let appended = 0;
      for (const [i, { tx }] of members.entries()) {
        if (!outcomes[i]!.ok) continue;
        if (tx.appended.length > 0) await applyProjections(tx.writes, this.projections, tx.appended);
        writes.push(...tx.writes.takePending());
        appended += tx.appended.length;
      }
      if (!outcomes.some((o) => o.ok)) {
        // Every command failed on its own rule before writing: nothing to keep, and nothing to run again.
        if (shared.opened) broken = await rollBack(client);
        return outcomes;
      }
      try {
        await shared.commit(writes);
      } catch (error) {
        // An ERROR from the server rolled everything back: safe to run again. Anything else (the connection lost, or
        // the session ended with FATAL) may have come after the COMMIT: running again could write everything
        // twice, so each command gets the error, as a transaction of its own would.
        if (!rolledBack(error)) {
          if (error instanceof Error) broken = error;
          return outcomes.map(() => ({ ok: false, error }));
        }
        throw error;
      }
      if (appended > 0) this.announceCommit();
      return outcomes;
    } catch {
      if (shared?.opened) broken = await rollBack(client);
      return undefined;
    } finally {
      client.release(broken);
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
    return readStreamWith(this.pool, streamId);
  }

  readAll(after: GlobalPosition, limit: number): Promise<StoredEvent[]> {
    return readAllWith(this.pool, after, limit);
  }
}

export async function applyProjections(sql: SqlRunner, projections: readonly Projection[], events: readonly RecordedEvent[]): Promise<void> {
  for (const event of events) {
    for (const projection of projections) {
      if (projection.eventTypes.includes(event.type)) await projection.apply(sql, event);
    }
  }
}
