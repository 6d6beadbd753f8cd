import type { NotificationKind } from '../domain/notifications/kinds.js';
import type { Queryable } from '../storage/postgres.js';

export interface UnseenNotification {
  id: string;
  kind: NotificationKind;
  subject_id: string;
  happened_at: Date;
}

/** The member's notifications in this workspace not marked seen, newest first, at most `limit`. */
export async function unseenOf(
  sql: Queryable,
  tenantId: string,
  userId: string,
  limit: number,
): Promise<UnseenNotification[]> {
  const result = await sql.query<UnseenNotification>(
    `SELECT id, kind, subject_id, happened_at FROM member_notifications
      WHERE tenant_id = $1 AND user_id = $2 AND seen_at IS NULL
      ORDER BY created_at DESC, id LIMIT $3`,
    [tenantId, userId, limit],
  );
  return result.rows;
}

/** Marks the member's notifications up to `upTo` (the time the page showed them) as seen; how many. */
export async function markSeen(sql: Queryable, tenantId: string, userId: string, upTo: Date, now: Date) {
  const result = await sql.query(
    `UPDATE member_notifications SET seen_at = $4
      WHERE tenant_id = $1 AND user_id = $2 AND seen_at IS NULL AND created_at <= $3`,
    [tenantId, userId, upTo, now],
  );
  return result.rowCount ?? 0;
}
