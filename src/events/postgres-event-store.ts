import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Projection } from '../projections/projection.js';
import { PgCode, pgErrorCode, type Queryable, type Sql } from '../storage/postgres.js';
import type { EventStore, StoreTransaction } from './event-store.js';
import {
  WrongExpectedRevisionError,
  type CommandContext,
  type ExpectedRevision,
  type GlobalPosition,
  type NewEvent,
  type StoredEvent,
} from './types.js';

export const EVENTS_CHANNEL = 'events_appended';

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
  private readonly locked = new Set<string>();

  constructor(
    readonly sql: Sql,
    readonly context: CommandContext,
  ) {}

  async lock(streams: string[]): Promise<void> {
    await lockStreams(this.sql, streams);
    for (const stream of streams) this.locked.add(stream);
  }

  readStream(streamId: string): Promise<StoredEvent[]> {
    return readStreamWith(this.sql, streamId);
  }

  async append(streamId: string, expected: ExpectedRevision, events: NewEvent[]): Promise<StoredEvent[]> {
    if (events.length === 0) return [];
    if (!this.locked.has(streamId)) {
      // Locking after a write would let this transaction's id sort before a commit it has already seen.
      if (this.appended.length > 0) throw new Error(`Stream ${streamId} must be named when the transaction starts`);
      await this.lock([streamId]);
    }
    const current = await this.sql.query<{ revision: number | null }>('SELECT max(revision) AS revision FROM events WHERE stream_id = $1', [streamId]);
    const actual = current.rows[0]?.revision ?? null;
    if (expected !== 'any') {
      const matches = expected === 'no_stream' ? actual === null : actual === expected;
      if (!matches) throw new WrongExpectedRevisionError(streamId, expected, actual ?? 'no_stream');
    }
    const first = (actual ?? -1) + 1;
    const { tenantId, sandbox, metadata, now } = this.context;
    const ids = events.map((event) => event.id ?? randomUUID());
    try {
      const result = await this.sql.query<EventRow>(
        `INSERT INTO events (id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at)
         SELECT id, $2, $3 + ord - 1, type, $4, $5, data, $6, $7
           FROM unnest($1::uuid[], $8::text[], $9::jsonb[]) WITH ORDINALITY AS e(id, type, data, ord)
         RETURNING ${COLUMNS}`,
        [ids, streamId, first, tenantId, sandbox, JSON.stringify(metadata), now, events.map((e) => e.type), events.map((e) => JSON.stringify(e.data))],
      );
      const stored = result.rows.map(toStoredEvent).sort((a, b) => a.revision - b.revision);
      this.appended.push(...stored);
      return stored;
    } catch (error) {
      if (pgErrorCode(error) === PgCode.uniqueViolation) throw new WrongExpectedRevisionError(streamId, expected, actual ?? 'no_stream');
      throw error;
    }
  }
}

export class PostgresEventStore implements EventStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly projections: readonly Projection[],
  ) {}

  async transact<T>(context: CommandContext, streams: string[], work: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const tx = new PostgresStoreTransaction(client, context);
      await tx.lock(streams);
      const result = await work(tx);
      if (tx.appended.length > 0) {
        await applyProjections(client, this.projections, tx.appended);
        await client.query(`SELECT pg_notify('${EVENTS_CHANNEL}', '')`);
      }
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  readStream(streamId: string): Promise<StoredEvent[]> {
    return readStreamWith(this.pool, streamId);
  }

  readAll(after: GlobalPosition, limit: number): Promise<StoredEvent[]> {
    return readAllWith(this.pool, after, limit);
  }
}

export async function applyProjections(sql: Sql, projections: readonly Projection[], events: readonly StoredEvent[]): Promise<void> {
  for (const event of events) {
    for (const projection of projections) {
      if (projection.eventTypes.includes(event.type)) await projection.apply(sql, event);
    }
  }
}
