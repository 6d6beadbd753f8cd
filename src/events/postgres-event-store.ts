import type pg from 'pg';
import type { Projection } from '../projections/projection.js';
import { PgCode, pgConstraint, pgErrorCode, type Queryable, type Statement } from '../storage/postgres.js';
import { TransactionSql } from '../storage/transaction-sql.js';
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

class PostgresStoreTransaction implements StoreTransaction {
  readonly appended: RecordedEvent[] = [];
  readonly sql: TransactionSql;
  readonly writes: WriteBatch;
  private readonly locked = new Set<string>();
  private now: Date;

  constructor(
    client: pg.PoolClient,
    private readonly baseContext: CommandContext,
    streams: string[],
    first: Statement | undefined,
  ) {
    const lock = lockStatement(streams);
    const opening: Statement[] = [{ text: 'BEGIN', values: [] }, ...(first ? [first] : []), ...(lock ? [lock] : [])];
    this.sql = new TransactionSql(client, opening);
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

/** A new stream's events refused at COMMIT because the stream already exists: the command may retry and decide again. */
function newStreamConflict(error: unknown): WrongExpectedRevisionError | undefined {
  if (pgErrorCode(error) !== PgCode.uniqueViolation || pgConstraint(error) !== 'events_stream_revision') return undefined;
  const detail = typeof error === 'object' && error !== null && 'detail' in error ? String(error.detail) : '';
  return new WrongExpectedRevisionError(NEW_STREAM_CONFLICT.exec(detail)?.[1] ?? 'unknown', 'no_stream', 'unknown');
}

export class PostgresEventStore implements EventStore {
  private readonly commitListeners = new Set<() => void>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly projections: readonly Projection[],
  ) {}

  async transact<T>(context: CommandContext, streams: string[], work: (tx: StoreTransaction) => Promise<T>, options: TransactOptions = {}): Promise<T> {
    const client = await this.pool.connect();
    let tx: PostgresStoreTransaction | undefined;
    try {
      tx = new PostgresStoreTransaction(client, context, streams, options.opening);
      const result = await work(tx);
      if (tx.appended.length > 0) await applyProjections(tx.writes, this.projections, tx.appended);
      await tx.writes.commit();
      if (tx.appended.length > 0) for (const listener of this.commitListeners) listener();
      return result;
    } catch (error) {
      if (tx?.opened) await client.query('ROLLBACK').catch(() => undefined);
      throw newStreamConflict(error) ?? error;
    } finally {
      client.release();
    }
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
