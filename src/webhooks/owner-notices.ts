import { randomUUID } from 'node:crypto';
import type { Queryable } from '../storage/postgres.js';
import type { NoticeFailure } from './pause-notice.js';

/** Channel a new owner notice is announced on, so a mailer in any process sends it at once. */
export const NOTICES_CHANNEL = 'webhook_notifications';
/** How long a claimed notice is the claimer's: past it, another mailer may send it (at least once). */
export const NOTICE_LEASE_MS = 60_000;
/** Attempts after which a notice is given up (status `failed`): the backoff below spreads them over about a day. */
export const NOTICE_MAX_ATTEMPTS = 24;

/** Wait before attempt n+1 after n failed ones: 30 s doubling, at most an hour. */
export function noticeBackoffMs(attempts: number): number {
  return Math.min(30_000 * 2 ** Math.max(0, attempts - 1), 3_600_000);
}

export interface PendingNotice {
  id: string;
  claim_id: string;
  attempts: number;
  recipient: string;
  subject: string;
  body: string;
}

/** The endpoint's latest failed attempts, newest first (for the notice). */
export async function latestFailures(sql: Queryable, endpointId: string, limit = 5): Promise<NoticeFailure[]> {
  const { rows } = await sql.query<{ at: Date; status: number | null; error: string | null }>(
    `SELECT a.attempted_at AS at, a.response_status AS status, a.error
       FROM webhook_deliveries d JOIN webhook_delivery_attempts a ON a.delivery_id = d.id
      WHERE d.endpoint_id = $1 AND (a.response_status IS NULL OR a.response_status NOT BETWEEN 200 AND 299)
      ORDER BY a.attempted_at DESC LIMIT $2`,
    [endpointId, limit],
  );
  return rows;
}

/**
 * Records one notice per recipient in the caller's transaction (the outbox): `pending` when a mailer is configured,
 * else `not_sent_no_smtp`, kept as the record that the owners could not be told.
 */
export async function recordNotices(
  sql: Queryable,
  notice: { tenantId: string; endpointId: string; kind: string; now: Date; mailing: boolean },
  messages: { recipient: string; subject: string; body: string }[],
): Promise<void> {
  if (messages.length === 0) return;
  await sql.query(
    `INSERT INTO webhook_notifications (id, tenant_id, endpoint_id, kind, recipient, subject, body, created_at, status, next_attempt_at)
     SELECT m.id, $1, $2, $3, m.recipient, m.subject, m.body, $4, $5, $4
       FROM unnest($6::uuid[], $7::text[], $8::text[], $9::text[]) AS m(id, recipient, subject, body)`,
    [
      notice.tenantId,
      notice.endpointId,
      notice.kind,
      notice.now,
      notice.mailing ? 'pending' : 'not_sent_no_smtp',
      messages.map(() => randomUUID()),
      messages.map((m) => m.recipient),
      messages.map((m) => m.subject),
      messages.map((m) => m.body),
    ],
  );
  if (notice.mailing) await sql.query(`SELECT pg_notify('${NOTICES_CHANNEL}', '')`);
}

/** A resumed endpoint's pause notices that were not sent yet are no longer true: they are kept, marked `obsolete`. */
export async function obsoletePauseNotices(sql: Queryable, endpointId: string): Promise<number> {
  const result = await sql.query(
    `UPDATE webhook_notifications SET status = 'obsolete', claim_id = NULL, lease_until = NULL
      WHERE endpoint_id = $1 AND status = 'pending' AND kind = 'webhook_endpoint_paused'`,
    [endpointId],
  );
  return result.rowCount ?? 0;
}

/** Claims due notices with a lease; SKIP LOCKED keeps two mailers off the same rows. */
export async function claimDueNotices(sql: Queryable, now: Date, limit: number): Promise<PendingNotice[]> {
  const { rows } = await sql.query<PendingNotice>(
    `UPDATE webhook_notifications n
        SET claim_id = gen_random_uuid(), lease_until = $1::timestamptz + make_interval(secs => $2::double precision / 1000),
            attempts = n.attempts + 1
      WHERE n.id IN (SELECT id FROM webhook_notifications
                      WHERE status = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
                      ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
      RETURNING n.id, n.claim_id, n.attempts, n.recipient, n.subject, n.body`,
    [now, NOTICE_LEASE_MS, limit],
  );
  return rows;
}

/** Marks a notice sent; false when the claim had lapsed and another mailer took it. */
export async function markNoticeSent(sql: Queryable, notice: PendingNotice, now: Date): Promise<boolean> {
  const result = await sql.query(
    `UPDATE webhook_notifications SET status = 'sent', sent_at = $3, lease_until = NULL, last_error = NULL
      WHERE id = $1 AND claim_id = $2 AND status = 'pending'`,
    [notice.id, notice.claim_id, now],
  );
  return result.rowCount === 1;
}

/** Records a failed send: tried again after the backoff, or given up after NOTICE_MAX_ATTEMPTS. */
export async function markNoticeFailed(sql: Queryable, notice: PendingNotice, now: Date, error: string): Promise<void> {
  const givenUp = notice.attempts >= NOTICE_MAX_ATTEMPTS;
  await sql.query(
    `UPDATE webhook_notifications SET status = $3, last_error = $4, lease_until = NULL, next_attempt_at = $5
      WHERE id = $1 AND claim_id = $2 AND status = 'pending'`,
    [
      notice.id,
      notice.claim_id,
      givenUp ? 'failed' : 'pending',
      error,
      new Date(now.getTime() + noticeBackoffMs(notice.attempts)),
    ],
  );
}
