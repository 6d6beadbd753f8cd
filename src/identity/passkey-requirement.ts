import type pg from 'pg';
import { announceAuthChange } from '../keys/key-cache.js';
import type { Queryable } from '../storage/postgres.js';
import type { PasskeyRequirement, Workspace } from '../workspaces/workspace.js';
import type { Role } from './permissions.js';

/** Whether the workspace asks this role to sign in with a passkey (settings.passkeys_required). */
export function passkeyRequired(workspace: Pick<Workspace, 'settings'>, role: Role): boolean {
  const requirement: PasskeyRequirement = workspace.settings.passkeys_required ?? 'none';
  switch (requirement) {
    case 'none':
      return false;
    case 'owners_and_admins':
      return role === 'owner' || role === 'admin';
    case 'everyone':
      return true;
  }
}

/** The owner's choice in the console: a new revision of the workspace, as `workspace apply` makes. */
export async function setPasskeyRequirement(
  pool: pg.Pool,
  workspaceId: string,
  requirement: PasskeyRequirement,
  now: Date,
): Promise<void> {
  await pool.query(
    `UPDATE workspaces SET settings = jsonb_set(settings, '{passkeys_required}', to_jsonb($2::text)),
            revision = revision + 1, updated_at = $3 WHERE id = $1`,
    [workspaceId, requirement, now],
  );
  await announceAuthChange(pool);
}

/**
 * The recovery of a lost passkey: another owner or admin removes every passkey of the member's account and ends its
 * sessions; the member signs in with their password and registers a new passkey before anything else.
 */
export async function resetPasskeysOf(sql: Queryable, email: string): Promise<number> {
  const account = (
    await sql.query<{ id: string }>('SELECT id FROM staff_accounts WHERE email = $1', [email.toLowerCase()])
  ).rows[0];
  if (!account) return 0;
  const removed = await sql.query('DELETE FROM staff_passkeys WHERE account_id = $1', [account.id]);
  await sql.query('DELETE FROM staff_sessions WHERE account_id = $1', [account.id]);
  return removed.rowCount ?? 0;
}

/** Whether the account has at least one passkey. */
export async function hasPasskey(sql: Queryable, accountId: string): Promise<boolean> {
  return (await sql.query('SELECT 1 FROM staff_passkeys WHERE account_id = $1 LIMIT 1', [accountId])).rows.length > 0;
}
