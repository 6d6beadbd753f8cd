import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Projection } from '../projections/projection.js';
import { PgCode, pgErrorCode, type Queryable, type Sql } from '../storage/postgres.js';
import { WriteBatch, type SqlRunner } from '../storage/write-batch.js';
import type { EventStore, StoreTransaction } from './event-store.js';
import {
  WrongExpectedRevisionError,
  type CommandContext,
  type ExpectedRevision,
  type GlobalPosition,
  type NewEvent,
  type StoredEvent,
} from './types.js';

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

/** Stream locks are transaction-scoped advisory locks keyed by the stream id's 64-bit hash. */
async function lockStreams(sql: Sql, streams: string[]): Promise<void> {
  const sorted = [...new Set(streams)].sort();
  if (sorted.length === 0) return;
  await sql.query('SELECT pg_advisory_xact_lock(hashtextextended(s, 0)) FROM unnest($1::text[]) AS s ORDER BY s', [sorted]);
}

class PostgresStoreTransaction implements StoreTransaction {
  readonly appended: StoredEvent[] = [];
  readonly writes: WriteBatch;
  private readonly locked = new Set<string>();

  constructor(
    readonly sql: Sql,
    readonly context: CommandContext,
  ) {
    this.writes = new WriteBatch(sql);
  }

  /** BEGIN and the stream locks in one round trip (a multi-statement simple query; stream ids are escaped literals). */
  async begin(streams: string[]): Promise<void> {
    const sorted = [...new Set(streams)].sort();
    const literals = sorted.map((stream) => this.sql.escapeLiteral(stream)).join(', ');
    const locks = sorted.length > 0 ? `; SELECT pg_advisory_xact_lock(hashtextextended(s, 0)) FROM unnest(ARRAY[${literals}]::text[]) AS s ORDER BY s` : '';
    await this.sql.query(`BEGIN${locks}`);
    for (const stream of sorted) this.locked.add(stream);
  }

  async lock(streams: string[]): Promise<void> {
    await lockStreams(this.sql, streams);
    for (const stream of streams) this.locked.add(stream);
  }

  readStream(streamId: string): Promise<StoredEvent[]> {
    return readStreamWith(this.sql, streamId);
  }

  async append(streamId: string, expected: ExpectedRevision, events: NewEvent[]): Promise<StoredEvent[]> {
    if (events.length === 0) return [];
    // A stream's first event needs no lock: any other writer of that stream fails on its unique revision.
    if (!this.locked.has(streamId) && expected !== 'no_stream') {
      // Locking after a write would let this transaction's id sort before a commit it has already seen.
      if (this.appended.length > 0) throw new Error(`Stream ${streamId} must be named when the transaction starts`);
      await this.lock([streamId]);
    }
    const { tenantId, sandbox, metadata, now } = this.context;
    const expectedCurrent = expected === 'any' ? null : expected === 'no_stream' ? -1 : expected;
    const ids = events.map((event) => event.id ?? randomUUID());
    let rows: EventRow[];
    try {
      // One round trip: the current revision, the expectation check and the insert.
      const result = await this.sql.query<EventRow>(
        `WITH current AS (SELECT coalesce(max(revision), -1) AS revision FROM events WHERE stream_id = $2)
         INSERT INTO events (id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at)
         SELECT e.id, $2, current.revision + e.ord, e.type, $3, $4, e.data, $5, $6
           FROM current, unnest($1::uuid[], $7::text[], $8::jsonb[]) WITH ORDINALITY AS e(id, type, data, ord)
          WHERE $9::integer IS NULL OR current.revision = $9::integer
         RETURNING ${COLUMNS}`,
        [ids, streamId, tenantId, sandbox, JSON.stringify(metadata), now, events.map((e) => e.type), events.map((e) => JSON.stringify(e.data)), expectedCurrent],
      );
      rows = result.rows;
    } catch (error) {
      if (pgErrorCode(error) === PgCode.uniqueViolation) throw new WrongExpectedRevisionError(streamId, expected, await this.currentRevision(streamId));
      throw error;
    }
    if (rows.length === 0) throw new WrongExpectedRevisionError(streamId, expected, await this.currentRevision(streamId));
    const stored = rows.map(toStoredEvent).sort((a, b) => a.revision - b.revision);
    this.appended.push(...stored);
    return stored;
  }

  private async currentRevision(streamId: string): Promise<number | 'no_stream'> {
    const result = await this.sql.query<{ revision: number | null }>('SELECT max(revision) AS revision FROM events WHERE stream_id = $1', [streamId]).catch(() => undefined);
    return result?.rows[0]?.revision ?? 'no_stream';
  }
}

export class PostgresEventStore implements EventStore {
  private readonly commitListeners = new Set<() => void>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly projections: readonly Projection[],
  ) {}

  async transact<T>(context: CommandContext, streams: string[], work: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      const tx = new PostgresStoreTransaction(client, context);
      await tx.begin(streams);
      const result = await work(tx);
      if (tx.appended.length > 0) await applyProjections(tx.writes, this.projections, tx.appended);
      await tx.writes.commit();
      if (tx.appended.length > 0) for (const listener of this.commitListeners) listener();
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
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

export async function applyProjections(sql: SqlRunner, projections: readonly Projection[], events: readonly StoredEvent[]): Promise<void> {
  for (const event of events) {
    for (const projection of projections) {
      if (projection.eventTypes.includes(event.type)) await projection.apply(sql, event);
    }
  }
}
