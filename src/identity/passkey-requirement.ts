import type pg from 'pg';
import { announceAuthChange } from '../keys/key-cache.js';
import type { Queryable } from '../storage/postgres.js';
import type { PasskeyRequirement, Workspace, WorkspaceUser } from '../workspaces/workspace.js';
import { MemberRefusal, membersElsewhere } from './members.js';
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

/**
 * Why this workspace may not reset the passkeys of this user, or undefined when it may. An account's passkeys serve
 * every workspace it belongs to, so a workspace resets only those of a member who has accepted there and belongs to no
 * other workspace: otherwise a reset would let whoever knows the password register a passkey and pass another
 * workspace's requirement. The operator resets the others (`visa-crm account reset-passkeys`).
 */
export async function passkeyResetRefusal(
  sql: Queryable,
  workspace: Pick<Workspace, 'id'>,
  user: WorkspaceUser,
): Promise<string | undefined> {
  if (!user.active || user.pending)
    return `${user.name} is not a member here yet (or no longer): only the passkeys of an active member who has accepted can be reset.`;
  if ((await membersElsewhere(sql, [user.email], workspace.id)).size > 0)
    return `${user.name}’s account belongs to another workspace too, and its passkeys serve both: ask the service’s operator to reset them.`;
  return undefined;
}

/** A workspace's reset of a member's passkeys, refused as `passkeyResetRefusal` says; the number removed. */
export async function resetMemberPasskeys(
  sql: Queryable,
  workspace: Pick<Workspace, 'id'>,
  user: WorkspaceUser,
): Promise<number> {
  const refusal = await passkeyResetRefusal(sql, workspace, user);
  if (refusal) throw new MemberRefusal('member', refusal);
  return resetPasskeysOf(sql, user.email);
}

/** Whether the account has at least one passkey. */
export async function hasPasskey(sql: Queryable, accountId: string): Promise<boolean> {
  return (await sql.query('SELECT 1 FROM staff_passkeys WHERE account_id = $1 LIMIT 1', [accountId])).rows.length > 0;
}
