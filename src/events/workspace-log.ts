import type { Queryable } from '../storage/postgres.js';
import type { StreamHead } from './chain.js';
import { QUALIFIED_COLUMNS, toStoredEvent, type EventRow } from './event-rows.js';
import type { GlobalPosition, StoredEvent } from './types.js';

/** A stored event with the hash that chains it to its stream (src/events/chain.ts). */
export interface HashedEvent extends StoredEvent {
  hash: Buffer;
  /** The stream's data key row (personal-data.ts), as stored: wrapped, or erased. */
  personalKey?: { person: string; wrapped: string | null; erasedAt: Date | null };
}

/**
 * One workspace's events after a position, in global order, with their hashes. Like readAllWith, it reads only rows
 * of transactions older than every running one, so a later commit can never land behind the last position read:
 * a reader that continues from it later misses nothing and reads nothing twice.
 */
export async function readWorkspaceLogWith(
  sql: Queryable,
  tenantId: string,
  after: GlobalPosition,
  limit: number,
): Promise<HashedEvent[]> {
  const result = await sql.query<
    EventRow & { hash: Buffer; key_person: string | null; key_wrapped: string | null; key_erased_at: Date | null }
  >(
    `SELECT ${QUALIFIED_COLUMNS}, events.hash,
            k.person_id AS key_person, k.wrapped_key AS key_wrapped, k.erased_at AS key_erased_at
       FROM events LEFT JOIN personal_data_keys k ON k.stream_id = events.stream_id
      WHERE events.tenant_id = $1 AND (events.tx_id, events.position) > ($2::xid8, $3::bigint)
        AND events.tx_id < pg_snapshot_xmin(pg_current_snapshot())
      ORDER BY events.tx_id, events.position
      LIMIT $4`,
    [tenantId, after.txId, after.position, limit],
  );
  return result.rows.map((row) => ({
    ...toStoredEvent(row),
    hash: row.hash,
    ...(row.key_person === null
      ? {}
      : { personalKey: { person: row.key_person, wrapped: row.key_wrapped, erasedAt: row.key_erased_at } }),
  }));
}

/** The head (last revision and hash) of each of a workspace's streams as of a position of the global log. */
export async function streamHeadsAt(sql: Queryable, tenantId: string, at: GlobalPosition): Promise<StreamHead[]> {
  const result = await sql.query<{ stream_id: string; revision: number; hash: Buffer }>(
    `SELECT DISTINCT ON (stream_id) stream_id, revision, hash FROM events
      WHERE tenant_id = $1 AND (tx_id, position) <= ($2::xid8, $3::bigint)
      ORDER BY stream_id, revision DESC`,
    [tenantId, at.txId, at.position],
  );
  return result.rows.map((r) => ({ streamId: r.stream_id, revision: r.revision, hash: r.hash }));
}

/** How many events of a workspace lie after a position (for a progress bar). */
export async function countWorkspaceEventsAfter(
  sql: Queryable,
  tenantId: string,
  after: GlobalPosition,
): Promise<number> {
  const result = await sql.query<{ count: string }>(
    'SELECT count(*)::text AS count FROM events WHERE tenant_id = $1 AND (tx_id, position) > ($2::xid8, $3::bigint)',
    [tenantId, after.txId, after.position],
  );
  return Number(result.rows[0]!.count);
}

/** The first transaction id not yet started now: every transaction that committed before this call is below it. */
export async function logHorizon(sql: Queryable): Promise<string> {
  const result = await sql.query<{ horizon: string }>(
    'SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS horizon',
  );
  return result.rows[0]!.horizon;
}

/**
 * Whether events of the workspace after a position, committed by a transaction below the horizon, are still kept
 * from the reader by an older transaction that is running: then the reader will see them once that one ends.
 */
export async function committedBehindRunning(
  sql: Queryable,
  tenantId: string,
  after: GlobalPosition,
  horizon: string,
): Promise<boolean> {
  const result = await sql.query<{ waiting: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM events WHERE tenant_id = $1 AND (tx_id, position) > ($2::xid8, $3::bigint)
        AND tx_id < $4::xid8) AS waiting`,
    [tenantId, after.txId, after.position, horizon],
  );
  return result.rows[0]!.waiting;
}
