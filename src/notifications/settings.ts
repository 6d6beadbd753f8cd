import { createHash, randomBytes } from 'node:crypto';
import type { Queryable } from '../storage/postgres.js';

/** How a member of one workspace is told: a mail at once per notification, a morning digest, both or neither. */
export interface NotificationSettings {
  atOnce: boolean;
  digest: boolean;
}

/** A member who never chose: at once, no digest. */
export const DEFAULT_SETTINGS: NotificationSettings = { atOnce: true, digest: false };

export async function settingsOf(sql: Queryable, tenantId: string, userId: string): Promise<NotificationSettings> {
  const result = await sql.query<{ at_once: boolean; digest: boolean }>(
    'SELECT at_once, digest FROM member_notification_settings WHERE tenant_id = $1 AND user_id = $2',
    [tenantId, userId],
  );
  const row = result.rows[0];
  return row ? { atOnce: row.at_once, digest: row.digest } : DEFAULT_SETTINGS;
}

export async function saveSettings(
  sql: Queryable,
  tenantId: string,
  userId: string,
  settings: NotificationSettings,
  now: Date,
): Promise<void> {
  await sql.query(
    `INSERT INTO member_notification_settings (tenant_id, user_id, at_once, digest, updated_at)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (tenant_id, user_id) DO UPDATE SET at_once = $3, digest = $4, updated_at = $5`,
    [tenantId, userId, settings.atOnce, settings.digest, now],
  );
}

const hashOf = (token: string) => createHash('sha256').update(token, 'utf8').digest();

/**
 * A new unsubscribe token for one member of one workspace (one per mail): 256 random bits, of which only the SHA-256
 * is kept. It does one thing, stop this member's notification mail from this workspace.
 */
export async function issueUnsubscribeToken(sql: Queryable, tenantId: string, userId: string, now: Date) {
  const token = randomBytes(32).toString('base64url');
  await sql.query(
    'INSERT INTO member_unsubscribe_tokens (token_hash, tenant_id, user_id, created_at) VALUES ($1, $2, $3, $4)',
    [hashOf(token), tenantId, userId, now],
  );
  return token;
}

/**
 * Whether the token is one issued to this member of this workspace. Looked up by its hash (the token itself is never
 * compared), and a token of another member or workspace names neither.
 */
export async function unsubscribeTokenHolds(
  sql: Queryable,
  token: string,
  tenantId: string,
  userId: string,
): Promise<boolean> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return false;
  const result = await sql.query(
    'SELECT 1 FROM member_unsubscribe_tokens WHERE token_hash = $1 AND tenant_id = $2 AND user_id = $3',
    [hashOf(token), tenantId, userId],
  );
  return result.rowCount === 1;
}

/** Stops every notification mail of this member from this workspace (Today still counts them). */
export async function unsubscribe(sql: Queryable, tenantId: string, userId: string, now: Date): Promise<void> {
  await saveSettings(sql, tenantId, userId, { atOnce: false, digest: false }, now);
}
