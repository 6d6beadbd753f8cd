import { randomUUID } from 'node:crypto';
import type { Queryable } from '../storage/postgres.js';
import type { Role } from './permissions.js';
import { newSecret, secretHash } from './secrets.js';

/** Personal access tokens start so, telling them apart from API keys (`sk_`/`pk_`) at a glance and in scanners. */
export const ACCESS_TOKEN_PREFIX = 'vcrm_pat_';

export interface AccessToken {
  id: string;
  account_id: string;
  tenant_id: string;
  name: string;
  role: Role;
  last_four: string;
  created_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
  /** Made in a session that had used a passkey: only such tokens work where the workspace requires passkeys. */
  made_with_passkey: boolean;
}

const COLUMNS =
  'id, account_id, tenant_id, name, role, last_four, created_at, expires_at, revoked_at, last_used_at, made_with_passkey';

/** A new token for a member in one workspace, carrying their role; the value is returned here only. */
export async function createAccessToken(
  sql: Queryable,
  input: {
    accountId: string;
    tenantId: string;
    role: Role;
    name: string;
    expiresAt: Date;
    now: Date;
    madeWithPasskey: boolean;
  },
): Promise<{ token: AccessToken; value: string }> {
  const value = newSecret(ACCESS_TOKEN_PREFIX);
  const result = await sql.query<AccessToken>(
    `INSERT INTO staff_access_tokens
       (id, token_hash, account_id, tenant_id, name, role, last_four, created_at, expires_at, made_with_passkey)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${COLUMNS}`,
    [
      randomUUID(),
      secretHash(value),
      input.accountId,
      input.tenantId,
      input.name,
      input.role,
      value.slice(-4),
      input.now,
      input.expiresAt,
      input.madeWithPasskey,
    ],
  );
  return { token: result.rows[0]!, value };
}

/** The live token of this value (not revoked, not expired), its last use moved to now, with its member's email. */
export async function useAccessToken(
  sql: Queryable,
  value: string,
  now: Date,
): Promise<(AccessToken & { email: string }) | undefined> {
  const result = await sql.query<AccessToken & { email: string }>(
    `UPDATE staff_access_tokens t SET last_used_at = $2 FROM staff_accounts a
      WHERE t.token_hash = $1 AND a.id = t.account_id AND t.revoked_at IS NULL AND t.expires_at > $2
     RETURNING t.id, t.account_id, t.tenant_id, t.name, t.role, t.last_four, t.created_at, t.expires_at,
               t.revoked_at, t.last_used_at, t.made_with_passkey, a.email`,
    [secretHash(value), now],
  );
  return result.rows[0];
}

export async function listAccessTokens(sql: Queryable, accountId: string): Promise<AccessToken[]> {
  const result = await sql.query<AccessToken>(
    `SELECT ${COLUMNS} FROM staff_access_tokens WHERE account_id = $1 ORDER BY created_at DESC`,
    [accountId],
  );
  return result.rows;
}

/** Revokes one of the account's own tokens; false when it has none of this id. */
export async function revokeAccessToken(sql: Queryable, accountId: string, id: string, now: Date): Promise<boolean> {
  const result = await sql.query(
    'UPDATE staff_access_tokens SET revoked_at = $3 WHERE id = $1 AND account_id = $2 AND revoked_at IS NULL',
    [id, accountId, now],
  );
  return (result.rowCount ?? 0) > 0;
}

/** Revokes every live token of the account (a reset, signing out everywhere, a password change that asks it). */
export async function revokeEveryAccessToken(sql: Queryable, accountId: string, now: Date): Promise<number> {
  const result = await sql.query(
    'UPDATE staff_access_tokens SET revoked_at = $2 WHERE account_id = $1 AND revoked_at IS NULL',
    [accountId, now],
  );
  return result.rowCount ?? 0;
}
