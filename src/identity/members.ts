import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { announceAuthChange } from '../keys/key-cache.js';
import { withTransaction, type Queryable } from '../storage/postgres.js';
import type { Workspace, WorkspaceUser } from '../workspaces/workspace.js';
import type { StaffAccount } from './accounts.js';
import type { Role } from './permissions.js';

/** A staff account's place in one workspace: the workspace's user of that email (src/workspaces/definition.ts). */
export interface Membership {
  workspace: Workspace;
  user: WorkspaceUser;
}

/** The active user of this email in the workspace: the member, whose role the permission table reads. */
export function activeMember(workspace: Workspace, email: string): WorkspaceUser | undefined {
  const wanted = email.toLowerCase();
  return workspace.settings.users.find((u) => u.email.toLowerCase() === wanted && u.active);
}

/** Every workspace where this email is an active member, for the workspace switcher. */
export async function membershipsOf(sql: Queryable, email: string): Promise<Membership[]> {
  const result = await sql.query<Workspace>(
    `SELECT id, slug, name, plan, status, revision, settings FROM workspaces
      WHERE settings->'users' @> $1::jsonb ORDER BY name`,
    [JSON.stringify([{ email: email.toLowerCase(), active: true }])],
  );
  return result.rows.flatMap((workspace) => {
    const user = activeMember(workspace, email);
    return user ? [{ workspace, user }] : [];
  });
}

export class MemberRefusal extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'MemberRefusal';
  }
}

/** A change of the workspace's users, decided on the list as it is now. */
export type MemberChange =
  | { type: 'invite'; email: string; name: string; role: Role; branch_id?: string }
  | { type: 'set_role'; user_id: string; role: Role }
  | { type: 'deactivate'; user_id: string }
  | { type: 'reactivate'; user_id: string };

/** The users after the change, or a refusal naming the field it concerns. Pure: the decider of membership. */
export function decideMembers(users: WorkspaceUser[], change: MemberChange): WorkspaceUser[] {
  switch (change.type) {
    case 'invite': {
      const email = change.email.toLowerCase();
      const existing = users.find((u) => u.email.toLowerCase() === email);
      if (existing?.active) throw new MemberRefusal('email', 'This person is already a member of the workspace');
      if (existing) return users.map((u) => (u === existing ? { ...u, role: change.role, active: true } : u));
      const branch_id = change.branch_id ?? users[0]?.branch_id;
      if (!branch_id) throw new MemberRefusal('branch', 'The workspace has no branch to put the member in');
      return [...users, { id: randomUUID(), name: change.name, email, role: change.role, branch_id, active: true }];
    }
    case 'set_role':
      return keepAnOwner(changeOne(users, change.user_id, (u) => ({ ...u, role: change.role })));
    case 'deactivate':
      return keepAnOwner(changeOne(users, change.user_id, (u) => ({ ...u, active: false })));
    case 'reactivate':
      return changeOne(users, change.user_id, (u) => ({ ...u, active: true }));
  }
}

function changeOne(users: WorkspaceUser[], id: string, change: (u: WorkspaceUser) => WorkspaceUser): WorkspaceUser[] {
  if (!users.some((u) => u.id === id)) throw new MemberRefusal('member', 'No such member in this workspace');
  return users.map((u) => (u.id === id ? change(u) : u));
}

function keepAnOwner(users: WorkspaceUser[]): WorkspaceUser[] {
  if (!users.some((u) => u.role === 'owner' && u.active))
    throw new MemberRefusal('role', 'A workspace keeps at least one active owner');
  return users;
}

/** The member a change concerns, before it (for the permission check and for ending their access). */
export function memberConcerned(workspace: Workspace, change: MemberChange): WorkspaceUser | undefined {
  return change.type === 'invite'
    ? workspace.settings.users.find((u) => u.email.toLowerCase() === change.email.toLowerCase())
    : workspace.settings.users.find((u) => u.id === change.user_id);
}

/**
 * Changes the workspace's users (a new revision, as `workspace apply` makes) and, when a member's role or activity
 * changed, ends their sessions and revokes their access tokens in the same transaction: their next request is refused.
 */
export async function changeMembers(
  pool: pg.Pool,
  workspaceId: string,
  change: MemberChange,
  now: Date,
): Promise<{ workspace: Workspace; user: WorkspaceUser }> {
  const result = await withTransaction(pool, async (sql) => {
    const row = (
      await sql.query<Workspace>(
        'SELECT id, slug, name, plan, status, revision, settings FROM workspaces WHERE id = $1 FOR UPDATE',
        [workspaceId],
      )
    ).rows[0];
    if (!row) throw new MemberRefusal('workspace', 'No such workspace');
    const users = decideMembers(row.settings.users, change);
    const updated = (
      await sql.query<Workspace>(
        `UPDATE workspaces SET settings = jsonb_set(settings, '{users}', $2::jsonb), revision = revision + 1,
                updated_at = $3 WHERE id = $1 RETURNING id, slug, name, plan, status, revision, settings`,
        [workspaceId, JSON.stringify(users), now],
      )
    ).rows[0]!;
    await endAccessOfChangedMembers(sql, workspaceId, row.settings.users, users, now);
    return { workspace: updated, user: memberConcerned(updated, change)! };
  });
  await announceAuthChange(pool);
  return result;
}

/**
 * Emails of the members whose sessions and tokens must end after the users changed from `before` to `after`: a role
 * changed, a member was deactivated or reactivated, or left the list. The console, the admin interface and
 * `workspace apply` all change users, so all three end access by this one rule.
 */
export function membersLosingAccess(before: readonly WorkspaceUser[], after: readonly WorkspaceUser[]): string[] {
  const afterByEmail = new Map(after.map((u) => [u.email.toLowerCase(), u]));
  return before
    .filter((u) => {
      const now = afterByEmail.get(u.email.toLowerCase());
      return !now || now.role !== u.role || now.active !== u.active;
    })
    .map((u) => u.email.toLowerCase());
}

/** Ends the access of every member `membersLosingAccess` names, inside the transaction that changed the users. */
export async function endAccessOfChangedMembers(
  sql: Queryable,
  workspaceId: string,
  before: readonly WorkspaceUser[],
  after: readonly WorkspaceUser[],
  now: Date,
): Promise<void> {
  for (const email of membersLosingAccess(before, after)) await endAccessOf(sql, workspaceId, email, now);
}

/** Ends every session of the member's account and revokes their access tokens in this workspace. */
export async function endAccessOf(sql: Queryable, workspaceId: string, email: string, now: Date): Promise<void> {
  const account = (
    await sql.query<Pick<StaffAccount, 'id'>>('SELECT id FROM staff_accounts WHERE email = $1', [email.toLowerCase()])
  ).rows[0];
  if (!account) return;
  await sql.query('DELETE FROM staff_sessions WHERE account_id = $1', [account.id]);
  await sql.query(
    'UPDATE staff_access_tokens SET revoked_at = $3 WHERE account_id = $1 AND tenant_id = $2 AND revoked_at IS NULL',
    [account.id, workspaceId, now],
  );
}
