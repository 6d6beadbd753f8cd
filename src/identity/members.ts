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

/**
 * The active user of this email in the workspace who has accepted their invitation: the member, whose role the
 * permission table reads. An invitee (`pending`) has no access until they accept.
 */
export function activeMember(workspace: Workspace, email: string): WorkspaceUser | undefined {
  const wanted = email.toLowerCase();
  return workspace.settings.users.find((u) => u.email.toLowerCase() === wanted && u.active && !u.pending);
}

/** Workspaces whose users hold this email, active, as the containment query finds them (one index read). */
async function workspacesListing(sql: Queryable, email: string): Promise<Workspace[]> {
  const result = await sql.query<Workspace>(
    `SELECT id, slug, name, plan, status, revision, settings FROM workspaces
      WHERE settings->'users' @> $1::jsonb ORDER BY name`,
    [JSON.stringify([{ email: email.toLowerCase(), active: true }])],
  );
  return result.rows;
}

/** Every workspace where this email is an active member, for the workspace switcher. */
export async function membershipsOf(sql: Queryable, email: string): Promise<Membership[]> {
  return (await workspacesListing(sql, email)).flatMap((workspace) => {
    const user = activeMember(workspace, email);
    return user ? [{ workspace, user }] : [];
  });
}

/**
 * Of these emails, those that are an accepted member (active, not an invitee) of a workspace other than this one: an
 * account whose credentials only that other workspace may have set up, and whose passkeys only the operator resets.
 */
export async function membersElsewhere(
  sql: Queryable,
  emails: readonly string[],
  workspaceId: string,
): Promise<Set<string>> {
  // The containment reads the workspaces_users index; the member is then told from an invitee in each found row.
  const result = await sql.query<{ email: string }>(
    `SELECT e.email FROM unnest($1::text[]) AS e(email)
      WHERE EXISTS (
        SELECT 1 FROM workspaces w, jsonb_array_elements(w.settings->'users') u
         WHERE w.id <> $2
           AND w.settings->'users' @> jsonb_build_array(jsonb_build_object('email', e.email, 'active', true))
           AND u->>'email' = e.email AND (u->>'active')::boolean AND coalesce(u->>'pending', '') = '')`,
    [emails.map((e) => e.toLowerCase()), workspaceId],
  );
  return new Set(result.rows.map((r) => r.email));
}

/** The invitations waiting for this email's answer: the workspaces where they are an active invitee. */
export async function pendingInvitationsOf(sql: Queryable, email: string): Promise<Membership[]> {
  const wanted = email.toLowerCase();
  return (await workspacesListing(sql, email)).flatMap((workspace) => {
    const user = workspace.settings.users.find((u) => u.email.toLowerCase() === wanted && u.active && u.pending);
    return user ? [{ workspace, user }] : [];
  });
}

/** What a member list says of a user: `invited` until they accept (or while their account has no way to sign in). */
export type MemberState = 'active' | 'invited' | 'invitation ended' | 'deactivated';

export function memberState(user: WorkspaceUser, credentialed: ReadonlySet<string>): MemberState {
  if (!user.active) return user.pending ? 'invitation ended' : 'deactivated';
  if (user.pending || !credentialed.has(user.email.toLowerCase())) return 'invited';
  return 'active';
}

/** Of these emails, those whose account can sign in (it has a password or a passkey), lower case. */
export async function credentialedEmails(sql: Queryable, emails: readonly string[]): Promise<Set<string>> {
  // The list reaches the plan through a sub-select: given as a value, its length entered a custom plan's estimate (a
  // generic one assumes 10), so with fewer members than that a prepared statement was planned again at every run, 85
  // µs of PostgreSQL's time in each lead capture (never-analyzed staff_accounts, docs/benchmarks.md).
  const result = await sql.query<{ email: string }>(
    `SELECT a.email FROM staff_accounts a
      WHERE a.email = ANY ((SELECT $1::text[])::text[])
        AND (a.password_hash IS NOT NULL OR EXISTS (SELECT 1 FROM staff_passkeys p WHERE p.account_id = a.id))`,
    [emails.map((e) => e.toLowerCase())],
  );
  return new Set(result.rows.map((r) => r.email));
}

export class MemberRefusal extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(message);
    this.field = field;
    this.name = 'MemberRefusal';
  }
}

/** A change of the workspace's users, decided on the list as it is now. */
export type MemberChange =
  | { type: 'invite'; email: string; name: string; role: Role; branch_id?: string; pending: 'link' | 'sign_in' }
  | { type: 'set_role'; user_id: string; role: Role }
  | { type: 'deactivate'; user_id: string }
  | { type: 'reactivate'; user_id: string }
  /** `via`: the invitation's own link, or the workspace list after signing in (only for `sign_in` invitations). */
  | { type: 'accept'; email: string; via: 'link' | 'sign_in' }
  | { type: 'decline'; email: string }
  /** The operator's new workspace: its first owner waits for their acceptance like any invitee. */
  | { type: 'await_acceptance'; user_id: string; pending: 'link' | 'sign_in' };

/**
 * The users after the change, or a refusal naming the field it concerns. Pure: the decider of membership.
 * `credentialed`: the emails whose account can sign in, which tell an owner who came from one who never did.
 */
export function decideMembers(
  users: WorkspaceUser[],
  change: MemberChange,
  credentialed: ReadonlySet<string>,
): WorkspaceUser[] {
  const after = applyChange(users, change);
  // The operator's new workspace: its first owner, named by the file, waits to accept (no owner has come yet).
  keepAnOwner(change.type === 'await_acceptance' ? [] : users, after, credentialed);
  return after;
}

function applyChange(users: WorkspaceUser[], change: MemberChange): WorkspaceUser[] {
  switch (change.type) {
    case 'invite':
      return invite(users, change);
    case 'set_role':
      return changeOne(users, change.user_id, (u) => ({ ...u, role: change.role }));
    case 'deactivate':
      return changeOne(users, change.user_id, (u) => ({ ...u, active: false }));
    case 'reactivate':
      return changeOne(users, change.user_id, (u) => {
        if (u.pending) throw new MemberRefusal('member', 'An invitation that ended is renewed by inviting them again');
        return { ...u, active: true };
      });
    case 'accept':
      return answerInvitation(users, change.email, (u) => {
        if (change.via === 'sign_in' && u.pending === 'link')
          throw new MemberRefusal('member', 'Open the link of your invitation to accept it');
        return withoutPending(u);
      });
    case 'decline':
      return answerInvitation(users, change.email, (u) => ({ ...u, active: false }));
    case 'await_acceptance':
      return changeOne(users, change.user_id, (u) => ({ ...u, pending: change.pending }));
  }
}

function invite(users: WorkspaceUser[], change: Extract<MemberChange, { type: 'invite' }>): WorkspaceUser[] {
  const email = change.email.toLowerCase();
  const existing = users.find((u) => u.email.toLowerCase() === email);
  if (existing?.active && !existing.pending)
    throw new MemberRefusal('email', 'This person is already a member of the workspace');
  // A former member or an invitee invited again: the same user (their records keep their id), waiting again.
  if (existing)
    return users.map((u) => (u === existing ? { ...u, role: change.role, active: true, pending: change.pending } : u));
  const branch_id = change.branch_id ?? users[0]?.branch_id;
  if (!branch_id) throw new MemberRefusal('branch', 'The workspace has no branch to put the member in');
  return [
    ...users,
    { id: randomUUID(), name: change.name, email, role: change.role, branch_id, active: true, pending: change.pending },
  ];
}

function withoutPending(user: WorkspaceUser): WorkspaceUser {
  const { pending: _accepted, ...member } = user;
  return member;
}

function answerInvitation(
  users: WorkspaceUser[],
  email: string,
  answer: (u: WorkspaceUser) => WorkspaceUser,
): WorkspaceUser[] {
  const wanted = email.toLowerCase();
  const invitee = users.find((u) => u.email.toLowerCase() === wanted && u.active && u.pending);
  if (!invitee) throw new MemberRefusal('member', 'This invitation was withdrawn or already answered');
  return users.map((u) => (u === invitee ? answer(u) : u));
}

function changeOne(users: WorkspaceUser[], id: string, change: (u: WorkspaceUser) => WorkspaceUser): WorkspaceUser[] {
  if (!users.some((u) => u.id === id)) throw new MemberRefusal('member', 'No such member in this workspace');
  return users.map((u) => (u.id === id ? change(u) : u));
}

/** Owners who came: active, their invitation accepted, and an account that can sign in. */
export function ownersWhoCame(users: readonly WorkspaceUser[], credentialed: ReadonlySet<string>): WorkspaceUser[] {
  return users.filter((u) => u.role === 'owner' && u.active && !u.pending && credentialed.has(u.email.toLowerCase()));
}

/**
 * A workspace keeps an active owner, and once an owner has come, one who has come: an invitee who never accepted
 * cannot be the last owner left behind by a step-down, a demotion or a deactivation.
 */
export function keepAnOwner(
  before: readonly WorkspaceUser[],
  after: readonly WorkspaceUser[],
  credentialed: ReadonlySet<string>,
): void {
  if (!after.some((u) => u.role === 'owner' && u.active))
    throw new MemberRefusal('role', 'A workspace keeps at least one active owner');
  if (ownersWhoCame(before, credentialed).length > 0 && ownersWhoCame(after, credentialed).length === 0)
    throw new MemberRefusal(
      'role',
      'A workspace keeps at least one owner who has accepted their invitation and signed in: make another member ' +
        'owner first, or wait until an invited owner accepts',
    );
}

/** The member a change concerns, before it (for the permission check and for ending their access). */
export function memberConcerned(workspace: Workspace, change: MemberChange): WorkspaceUser | undefined {
  switch (change.type) {
    case 'invite':
    case 'accept':
    case 'decline':
      return workspace.settings.users.find((u) => u.email.toLowerCase() === change.email.toLowerCase());
    case 'set_role':
    case 'deactivate':
    case 'reactivate':
    case 'await_acceptance':
      return workspace.settings.users.find((u) => u.id === change.user_id);
  }
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
    const credentialed = await credentialedEmails(
      sql,
      row.settings.users.map((u) => u.email),
    );
    const users = decideMembers(row.settings.users, change, credentialed);
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
 * changed, a member was deactivated or reactivated, or left the list (invitees are not members yet: none). The console, the admin interface and
 * `workspace apply` all change users, so all three end access by this one rule.
 */
export function membersLosingAccess(before: readonly WorkspaceUser[], after: readonly WorkspaceUser[]): string[] {
  const afterByEmail = new Map(after.map((u) => [u.email.toLowerCase(), u]));
  return before
    .filter((u) => !u.pending) // an invitee had no access here to lose (their other workspaces keep theirs)
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
