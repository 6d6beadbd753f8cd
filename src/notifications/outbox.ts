import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { DIGEST_HOUR, localDateAndHour } from '../domain/notifications/words.js';
import type { Queryable } from '../storage/postgres.js';
import { withTransaction } from '../storage/postgres.js';
import { findWorkspace } from '../workspaces/repository.js';
import type { NotificationRow } from './facts.js';
import { listeningMember } from './facts.js';
import { settingsOf } from './settings.js';

const LEASE_MS = 60_000;
/** After this many failed sends a notification is not mailed at once (it is still in the digest and on Today). */
export const MAX_ATTEMPTS = 8;

export interface ClaimedNotification extends NotificationRow {
  claim_id: string;
  instant_attempts: number;
}

const ROW = 'id, tenant_id, user_id, kind, subject_id, sandbox, happened_at, claim_id, instant_attempts';

/** Claims notifications still to be mailed at once, each with a lease, so one worker at a time handles each. */
export async function claimAtOnce(sql: Queryable, now: Date, limit: number): Promise<ClaimedNotification[]> {
  const result = await sql.query<ClaimedNotification>(
    `UPDATE member_notifications n SET claim_id = $1, lease_until = $2::timestamptz + $4 * interval '1 millisecond',
            instant_attempts = n.instant_attempts + 1
      WHERE n.id IN (SELECT id FROM member_notifications
                      WHERE instant_state = 'pending' AND (lease_until IS NULL OR lease_until < $2)
                      ORDER BY created_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
     RETURNING ${ROW}`,
    [randomUUID(), now, limit, LEASE_MS],
  );
  return result.rows;
}

/** Records the outcome of a claimed notification; false when the claim had lapsed and another took it. */
export async function settleAtOnce(
  sql: Queryable,
  row: ClaimedNotification,
  state: 'sent' | 'skipped' | 'failed',
): Promise<boolean> {
  const result = await sql.query(
    `UPDATE member_notifications SET instant_state = $3, lease_until = NULL WHERE id = $1 AND claim_id = $2`,
    [row.id, row.claim_id, state],
  );
  return result.rowCount === 1;
}

/** A failed send: tried again after 30 s, doubling, under the same row (its lease is its next attempt time). */
export async function retryAtOnceLater(sql: Queryable, row: ClaimedNotification, now: Date): Promise<void> {
  if (row.instant_attempts >= MAX_ATTEMPTS) {
    await settleAtOnce(sql, row, 'failed');
    return;
  }
  await sql.query(
    `UPDATE member_notifications SET claim_id = NULL,
            lease_until = $3::timestamptz + $4 * interval '1 second' WHERE id = $1 AND claim_id = $2`,
    [row.id, row.claim_id, now, 30 * 2 ** (row.instant_attempts - 1)],
  );
}

/**
 * Opens today's digest of every member whose morning has come (DIGEST_HOUR in the workspace's zone) and who has
 * notifications not in a digest yet: one row per member and local date (unique), holding those notifications. A
 * member who chose no digest, or who may hear nothing, gets a `skipped` one, so their notifications leave the queue.
 * Each member's digest is opened in its own transaction; answers how many were opened to be mailed.
 */
export async function openDueDigests(pool: pg.Pool, now: Date, limit = 200): Promise<number> {
  const members = await pool.query<{ tenant_id: string; user_id: string }>(
    `SELECT DISTINCT tenant_id, user_id FROM member_notifications WHERE digest_id IS NULL AND created_at <= $1 LIMIT $2`,
    [now, limit],
  );
  let opened = 0;
  for (const m of members.rows) if (await openDigest(pool, m.tenant_id, m.user_id, now)) opened += 1;
  return opened;
}

async function openDigest(pool: pg.Pool, tenantId: string, userId: string, now: Date): Promise<boolean> {
  const workspace = await findWorkspace(pool, tenantId);
  const zone = workspace?.settings.time_zone ?? 'UTC';
  const local = localDateAndHour(now, zone);
  if (workspace && local.hour < DIGEST_HOUR) return false;
  const wanted = workspace && listeningMember(workspace, userId) && (await settingsOf(pool, tenantId, userId)).digest;
  return withTransaction(pool, async (sql) => {
    const digest = await sql.query<{ id: string }>(
      `INSERT INTO member_notification_digests (id, tenant_id, user_id, local_date, state, created_at)
       VALUES ($1, $2, $3, $4::date, $5, $6)
       ON CONFLICT (tenant_id, user_id, local_date) DO NOTHING RETURNING id`,
      [randomUUID(), tenantId, userId, local.date, wanted ? 'pending' : 'skipped', now],
    );
    const id = digest.rows[0]?.id;
    // Today's digest exists: what came after it waits for tomorrow's.
    if (!id) return false;
    await sql.query(
      `UPDATE member_notifications SET digest_id = $3
        WHERE tenant_id = $1 AND user_id = $2 AND digest_id IS NULL AND created_at <= $4`,
      [tenantId, userId, id, now],
    );
    return Boolean(wanted);
  });
}

export interface ClaimedDigest {
  id: string;
  tenant_id: string;
  user_id: string;
  local_date: string;
  claim_id: string;
  attempts: number;
}

/** Claims digests to mail, each with a lease. */
export async function claimDigests(sql: Queryable, now: Date, limit: number): Promise<ClaimedDigest[]> {
  const result = await sql.query<ClaimedDigest>(
    `UPDATE member_notification_digests d SET claim_id = $1, attempts = d.attempts + 1,
            lease_until = $2::timestamptz + $4 * interval '1 millisecond'
      WHERE d.id IN (SELECT id FROM member_notification_digests
                      WHERE state = 'pending' AND (lease_until IS NULL OR lease_until < $2)
                      ORDER BY created_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
     RETURNING id, tenant_id, user_id, to_char(local_date, 'YYYY-MM-DD') AS local_date, claim_id, attempts`,
    [randomUUID(), now, limit, LEASE_MS],
  );
  return result.rows;
}

export async function notificationsOfDigest(sql: Queryable, digest: ClaimedDigest): Promise<NotificationRow[]> {
  const result = await sql.query<NotificationRow>(
    `SELECT id, tenant_id, user_id, kind, subject_id, sandbox, happened_at FROM member_notifications
      WHERE digest_id = $1 AND tenant_id = $2 AND user_id = $3 ORDER BY happened_at, id`,
    [digest.id, digest.tenant_id, digest.user_id],
  );
  return result.rows;
}

export async function settleDigest(
  sql: Queryable,
  digest: ClaimedDigest,
  state: 'sent' | 'skipped' | 'failed',
  now: Date,
): Promise<boolean> {
  const result = await sql.query(
    `UPDATE member_notification_digests SET state = $3, lease_until = NULL, sent_at = CASE WHEN $3 = 'sent' THEN $4::timestamptz END
      WHERE id = $1 AND claim_id = $2`,
    [digest.id, digest.claim_id, state, now],
  );
  return result.rowCount === 1;
}

export async function retryDigestLater(sql: Queryable, digest: ClaimedDigest, now: Date): Promise<void> {
  if (digest.attempts >= MAX_ATTEMPTS) {
    await settleDigest(sql, digest, 'failed', now);
    return;
  }
  await sql.query(
    `UPDATE member_notification_digests SET claim_id = NULL,
            lease_until = $3::timestamptz + $4 * interval '1 second' WHERE id = $1 AND claim_id = $2`,
    [digest.id, digest.claim_id, now, 30 * 2 ** (digest.attempts - 1)],
  );
}
