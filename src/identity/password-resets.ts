import { randomUUID } from 'node:crypto';
import type { AppServices } from '../bootstrap.js';
import type { RateLimitStore } from '../ratelimit/token-bucket.js';
import { withTransaction, type Queryable } from '../storage/postgres.js';
import { revokeEveryAccessToken } from './access-tokens.js';
import { ensureAccount, setPassword } from './accounts.js';
import { oneTimeLink } from './invitations.js';
import type { MailTransport } from '../shared/smtp.js';
import { membershipsOf } from './members.js';
import { consumeOneTimeToken, issuePasswordResetToken } from './one-time-tokens.js';
import { IDENTITY_POLICY } from './policy.js';
import { endEverySession } from './sessions.js';

/** The channel a new reset request is announced on, so a worker in any process mails it at once. */
export const RESET_CHANNEL = 'staff_reset_requests';
const LEASE_MS = 60_000;
const MAX_ATTEMPTS = 5;

export type ResetRequestResult = { type: 'queued' } | { type: 'throttled'; retryAfterSeconds: number };

/**
 * "Forgot my password": the same work whatever the email (docs/decisions.md, "Staff identity"). It takes from the
 * email's and the address's buckets and writes a row to the reset outbox; whether the email is a member's is looked
 * up later, by the worker that mails the link (ResetMailer). Without SMTP no row is written: nothing could go out.
 */
export async function requestPasswordReset(
  deps: { sql: Queryable; rateLimits: RateLimitStore; now: () => Date; mailing: boolean },
  input: { email: string; address: string },
): Promise<ResetRequestResult> {
  const email = input.email.trim().toLowerCase();
  const gate = await deps.rateLimits.take([
    { id: `reset:account:${email}`, scope: 'password_reset', spec: IDENTITY_POLICY.resetPerAccount },
    { id: `reset:address:${input.address}`, scope: 'password_reset', spec: IDENTITY_POLICY.resetPerAddress },
  ]);
  if (!gate.allowed) return { type: 'throttled', retryAfterSeconds: gate.retryAfterSeconds };
  if (!deps.mailing) return { type: 'queued' };
  const now = deps.now();
  await deps.sql.query(
    `INSERT INTO staff_reset_requests (id, email, requested_at, next_attempt_at) VALUES ($1, $2, $3, $3)`,
    [randomUUID(), email, now],
  );
  await deps.sql.query(`SELECT pg_notify('${RESET_CHANNEL}', '')`);
  return { type: 'queued' };
}

export interface ResetRequest {
  id: string;
  email: string;
  requested_at: Date;
  attempts: number;
  claim_id: string;
}

/** Claims due requests with a lease, so each is handled by one worker at a time. */
export async function claimResetRequests(sql: Queryable, now: Date, limit: number): Promise<ResetRequest[]> {
  const result = await sql.query<ResetRequest>(
    `UPDATE staff_reset_requests r SET claim_id = $1, lease_until = $2::timestamptz + $4 * interval '1 millisecond',
            attempts = r.attempts + 1
      WHERE r.id IN (SELECT id FROM staff_reset_requests
                      WHERE next_attempt_at <= $2 AND (lease_until IS NULL OR lease_until < $2)
                      ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
     RETURNING r.id, r.email, r.requested_at, r.attempts, r.claim_id`,
    [randomUUID(), now, limit, LEASE_MS],
  );
  return result.rows;
}

async function forget(sql: Queryable, request: ResetRequest): Promise<void> {
  await sql.query('DELETE FROM staff_reset_requests WHERE id = $1 AND claim_id = $2', [request.id, request.claim_id]);
}

/**
 * Handles one request: a member's email gets a new link (ending the one still live) by mail; any other email gets
 * nothing. The row is deleted once handled, or after five failed sends; a request older than a link's lifetime is
 * dropped, since its link would arrive dead. The link's value exists only in the mail.
 */
export async function handleResetRequest(
  services: Pick<AppServices, 'pool' | 'config' | 'now'>,
  transport: MailTransport,
  request: ResetRequest,
): Promise<'sent' | 'no_member' | 'stale' | 'failed'> {
  const now = services.now();
  if (now.getTime() - request.requested_at.getTime() > IDENTITY_POLICY.passwordResetMs) {
    await forget(services.pool, request);
    return 'stale';
  }
  const first = (await membershipsOf(services.pool, request.email))[0];
  if (!first) {
    await forget(services.pool, request);
    return 'no_member';
  }
  const account = await ensureAccount(services.pool, first.user, now);
  const token = await withTransaction(services.pool, (sql) =>
    issuePasswordResetToken(sql, { accountId: account.id, now, lifetimeMs: IDENTITY_POLICY.passwordResetMs }),
  );
  try {
    await transport.sendMail({
      from: services.config.smtpFrom,
      to: account.email,
      subject: 'Reset your visa-crm password',
      text: `Someone asked to reset the password of ${account.email}.\n\nChoose a new one here (the link works once, for 30 minutes):\n${oneTimeLink(services, 'password_reset', token)}\n\nIf it was not you, do nothing.\n`,
    });
  } catch {
    await (request.attempts >= MAX_ATTEMPTS
      ? forget(services.pool, request)
      : services.pool.query(
          `UPDATE staff_reset_requests SET claim_id = NULL, lease_until = NULL,
                  next_attempt_at = $3::timestamptz + $4 * interval '1 second' WHERE id = $1 AND claim_id = $2`,
          [request.id, request.claim_id, now, 30 * 2 ** request.attempts],
        ));
    return 'failed';
  }
  await forget(services.pool, request);
  return 'sent';
}

/**
 * Sets a new password with a reset link: in one transaction the link is used, the password set (which ends every
 * other reset link: a trigger, migration 0105), every session ended and every personal access token revoked, since
 * a reset says the old password may be someone else's. The account's id, or undefined when the link is spent.
 */
export async function resetPassword(
  services: Pick<AppServices, 'pool' | 'now'>,
  token: string,
  password: string,
): Promise<string | undefined> {
  return withTransaction(services.pool, async (sql) => {
    const now = services.now();
    const used = await consumeOneTimeToken(sql, 'password_reset', token, now);
    if (!used) return undefined;
    await setPassword(sql, used.account_id, password, now);
    await endEverySession(sql, used.account_id);
    await revokeEveryAccessToken(sql, used.account_id, now);
    return used.account_id;
  });
}
