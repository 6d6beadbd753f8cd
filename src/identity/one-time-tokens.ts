import type { Queryable } from '../storage/postgres.js';
import { newSecret, secretHash } from './secrets.js';

export type OneTimePurpose = 'invitation' | 'password_reset';

/** A single-use token for an invitation or a password reset; the value goes out by email and is never stored. */
export async function issueOneTimeToken(
  sql: Queryable,
  input: { purpose: OneTimePurpose; accountId: string; tenantId: string | null; now: Date; lifetimeMs: number },
): Promise<string> {
  const value = newSecret('');
  await sql.query(
    `INSERT INTO staff_one_time_tokens (token_hash, purpose, account_id, tenant_id, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [
      secretHash(value),
      input.purpose,
      input.accountId,
      input.tenantId,
      input.now,
      new Date(input.now.getTime() + input.lifetimeMs),
    ],
  );
  return value;
}

/** Whether the token is usable now (unused, unexpired), without using it: the page that asks for a password. */
export async function peekOneTimeToken(
  sql: Queryable,
  purpose: OneTimePurpose,
  value: string,
  now: Date,
): Promise<{ account_id: string; tenant_id: string | null } | undefined> {
  const result = await sql.query<{ account_id: string; tenant_id: string | null }>(
    `SELECT account_id, tenant_id FROM staff_one_time_tokens
      WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > $3`,
    [secretHash(value), purpose, now],
  );
  return result.rows[0];
}

/** Uses the token: one statement marks it used, so two concurrent uses cannot both succeed. */
export async function consumeOneTimeToken(
  sql: Queryable,
  purpose: OneTimePurpose,
  value: string,
  now: Date,
): Promise<{ account_id: string; tenant_id: string | null } | undefined> {
  const result = await sql.query<{ account_id: string; tenant_id: string | null }>(
    `UPDATE staff_one_time_tokens SET used_at = $3
      WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > $3
     RETURNING account_id, tenant_id`,
    [secretHash(value), purpose, now],
  );
  return result.rows[0];
}

/**
 * A new password reset link for the account, ending the one still live, if any: at most one per account (a partial
 * unique index backs it). Run in a transaction: the account's row is locked so two requests take turns.
 */
export async function issuePasswordResetToken(
  sql: Queryable,
  input: { accountId: string; now: Date; lifetimeMs: number },
): Promise<string> {
  await sql.query('SELECT 1 FROM staff_accounts WHERE id = $1 FOR UPDATE', [input.accountId]);
  await sql.query(
    `DELETE FROM staff_one_time_tokens WHERE account_id = $1 AND purpose = 'password_reset' AND used_at IS NULL`,
    [input.accountId],
  );
  return issueOneTimeToken(sql, { purpose: 'password_reset', tenantId: null, ...input });
}
