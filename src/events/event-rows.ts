import type { Queryable } from '../storage/postgres.js';
import type { GlobalPosition, StoredEvent } from './types.js';

export interface EventRow {
  id: string;
  stream_id: string;
  revision: number;
  type: string;
  tenant_id: string;
  sandbox: boolean;
  data: Record<string, unknown>;
  metadata: StoredEvent['metadata'];
  created_at: Date;
  tx_id_text: string;
  position: number;
}

// The transaction id travels as text (xid8 is 64-bit), under a name of its own: an output column named `tx_id` would
// be what a bare `ORDER BY tx_id` sorts by, as text (`1000` before `999`), and it would keep the index unused.
export const COLUMNS =
  'id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at, tx_id::text AS tx_id_text, position';

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
    position: { txId: row.tx_id_text, position: row.position },
  };
}

export async function readStreamWith(sql: Queryable, streamId: string): Promise<StoredEvent[]> {
  const result = await sql.query<EventRow>(`SELECT ${COLUMNS} FROM events WHERE stream_id = $1 ORDER BY revision`, [
    streamId,
  ]);
  return result.rows.map(toStoredEvent);
}

/** Reads the log in global order. Only rows of transactions older than every running one are visible, so no later commit can slot in behind. */
export async function readAllWith(
  sql: Queryable,
  after: GlobalPosition,
  limit: number,
  onlySettled = true,
): Promise<StoredEvent[]> {
  const settled = onlySettled ? 'AND tx_id < pg_snapshot_xmin(pg_current_snapshot())' : '';
  const result = await sql.query<EventRow>(
    `SELECT ${COLUMNS} FROM events
      WHERE (tx_id, position) > ($1::xid8, $2::bigint) ${settled}
      ORDER BY events.tx_id, events.position
      LIMIT $3`,
    [after.txId, after.position, limit],
  );
  return result.rows.map(toStoredEvent);
}
