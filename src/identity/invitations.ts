import type { AppServices } from '../bootstrap.js';
import { withTransaction } from '../storage/postgres.js';
import type { Workspace, WorkspaceUser } from '../workspaces/workspace.js';
import { findWorkspace } from '../workspaces/repository.js';
import { ensureAccount, findAccount, setPassword, type StaffAccount } from './accounts.js';
import { staffMailer } from './mail.js';
import { activeMember, changeMembers, credentialedEmails, MemberRefusal, membersElsewhere } from './members.js';
import type { Queryable } from '../storage/postgres.js';
import { consumeOneTimeToken, issueOneTimeToken, peekOneTimeToken, type OneTimePurpose } from './one-time-tokens.js';
import type { Role } from './permissions.js';
import { IDENTITY_POLICY } from './policy.js';

type Services = Pick<AppServices, 'pool' | 'config' | 'now'>;

/** The console page a one-time token opens. */
export function oneTimeLink(services: Pick<AppServices, 'config'>, purpose: OneTimePurpose, token: string): string {
  const page = purpose === 'invitation' ? 'invitation' : 'reset';
  return `${services.config.publicBaseUrl}/console/${page}/${token}`;
}

/** What became of an invitation: mailed, or its link to hand over (only ever for an account not yet set up). */
export interface InvitationSent {
  email: string;
  mailed: boolean;
  /** Shown to the inviter only when no mail server is set and `openToThisWorkspace` (below) holds. */
  link: string | null;
  /** The email already has an account that can sign in: they accept after signing in as themselves. */
  existingAccount: boolean;
  /**
   * The account cannot sign in yet but is a member of another workspace: only that workspace's own link sets it up,
   * so this one is not handed over (the person accepts after setting up their account there).
   */
  memberElsewhere: boolean;
}

/**
 * Whether an invitation link of this workspace may create the account's credentials: it has none yet and is not a
 * member of any other workspace. Whoever holds the link becomes the account, with every membership the account has;
 * without a mail server the inviter holds it, so a workspace sets up only accounts that would be its alone. A member
 * named by another workspace's definition file (an account without credentials) gets their first link from there.
 */
export async function openToThisWorkspace(sql: Queryable, email: string, workspaceId: string): Promise<boolean> {
  const wanted = email.toLowerCase();
  if ((await credentialedEmails(sql, [wanted])).has(wanted)) return false;
  return !(await membersElsewhere(sql, [wanted], workspaceId)).has(wanted);
}

/**
 * Issues an invitation link bound to the member's email (an account is made for it when there is none) and mails
 * it. With SMTP set the link goes to the recipient only. Without, it is returned for the inviter to hand over only
 * when the account cannot sign in yet, so all it can do is set up that new account; an existing account accepts
 * after signing in as itself, on its workspace list or through the link.
 */
export async function sendInvitation(
  services: Services,
  workspace: Workspace,
  member: WorkspaceUser,
): Promise<InvitationSent> {
  const now = services.now();
  const account = await ensureAccount(services.pool, member, now);
  const existingAccount = (await credentialedEmails(services.pool, [account.email])).has(account.email);
  const open = await openToThisWorkspace(services.pool, account.email, workspace.id);
  const token = await issueOneTimeToken(services.pool, {
    purpose: 'invitation',
    accountId: account.id,
    tenantId: workspace.id,
    now,
    lifetimeMs: IDENTITY_POLICY.invitationMs,
  });
  const link = oneTimeLink(services, 'invitation', token);
  const mailed = await staffMailer(services.config)({
    to: member.email,
    subject: `You are invited to ${workspace.name}`,
    text: existingAccount
      ? `You have been invited to ${workspace.name} as ${member.role}.\n\nSign in with your account, then accept or decline on your workspace list or here (for seven days):\n${link}\n`
      : `You have been invited to ${workspace.name} as ${member.role}.\n\nChoose your password here (the link works once, for seven days):\n${link}\n`,
  });
  return {
    email: account.email,
    mailed,
    link: mailed || !open ? null : link,
    existingAccount,
    memberElsewhere: !existingAccount && !open,
  };
}

/** Adds an invitee to the workspace (or invites a former member or an invitee again) and sends the invitation. */
export async function inviteMember(
  services: Services,
  workspace: Workspace,
  person: { email: string; name: string; role: Role; branch_id?: string },
): Promise<{ member: WorkspaceUser; sent: InvitationSent }> {
  const existing = (await credentialedEmails(services.pool, [person.email])).has(person.email.toLowerCase());
  // A member who has never signed in (named by the workspace's file): inviting them sends their first link instead.
  const member = activeMember(workspace, person.email);
  if (member && !existing) return { member, sent: await sendInvitation(services, workspace, member) };
  const changed = await changeMembers(
    services.pool,
    workspace.id,
    { type: 'invite', ...person, pending: existing ? 'sign_in' : 'link' },
    services.now(),
  );
  return { member: changed.user, sent: await sendInvitation(services, changed.workspace, changed.user) };
}

export function isUsableOneTimeToken(services: Services, purpose: OneTimePurpose, token: string) {
  return peekOneTimeToken(services.pool, purpose, token, services.now());
}

/**
 * The first owner of a workspace the operator created (`created`): an invitee like any other, then their invitation.
 * Of a workspace that existed (the demo's next start), an owner who can sign in already is left as they are.
 */
export async function inviteFirstOwner(
  services: Services,
  workspace: Workspace,
  created: boolean,
): Promise<InvitationSent> {
  const owner = workspace.settings.users.find((u) => u.role === 'owner' && u.active)!;
  const existing = (await credentialedEmails(services.pool, [owner.email])).has(owner.email.toLowerCase());
  if (!created && existing && !owner.pending)
    return { email: owner.email, mailed: false, link: null, existingAccount: true, memberElsewhere: false };
  const changed = await changeMembers(
    services.pool,
    workspace.id,
    { type: 'await_acceptance', user_id: owner.id, pending: existing ? 'sign_in' : 'link' },
    services.now(),
  );
  return sendInvitation(services, changed.workspace, changed.user);
}

/** An invitation link as its page reads it: whose, to which workspace, and whether that account can sign in. */
export interface OpenInvitation {
  account: StaffAccount;
  workspace: Workspace;
  invitee: WorkspaceUser;
  existingAccount: boolean;
  /** The account cannot sign in yet and belongs to another workspace: this link cannot set it up. */
  memberElsewhere: boolean;
}

/** The invitation of a link still usable and still waiting in its workspace; undefined otherwise. */
export async function openInvitation(services: Services, token: string): Promise<OpenInvitation | undefined> {
  const held = await peekOneTimeToken(services.pool, 'invitation', token, services.now());
  if (!held?.tenant_id) return undefined;
  const account = await findAccount(services.pool, held.account_id);
  const workspace = await findWorkspace(services.pool, held.tenant_id);
  if (!account || !workspace) return undefined;
  const existingAccount = (await credentialedEmails(services.pool, [account.email])).has(account.email);
  // An invitee, or a member who has never signed in (named by a definition file): the link is their first.
  const invitee = workspace.settings.users.find(
    (u) => u.email.toLowerCase() === account.email && u.active && (u.pending || !existingAccount),
  );
  if (!invitee) return undefined;
  const memberElsewhere = !existingAccount && !(await openToThisWorkspace(services.pool, account.email, workspace.id));
  return { account, workspace, invitee, existingAccount, memberElsewhere };
}

export type InvitationOutcome =
  | { type: 'joined'; accountId: string; workspace: Workspace; member: WorkspaceUser }
  | { type: 'declined'; workspace: Workspace }
  /** The link is spent, expired or withdrawn. */
  | { type: 'spent' }
  /** The account can sign in already: the link sets no password; sign in as it and accept. */
  | { type: 'existing_account' }
  /** The account is a member of another workspace: that workspace's own link sets it up (openToThisWorkspace). */
  | { type: 'member_elsewhere' };

/**
 * A new account's invitation (or a member's first link): chooses its password and joins the workspace. The account is
 * locked and checked in the transaction that uses the link: a link never sets the password of an account that has
 * one or a passkey, nor of one that is a member of another workspace (openToThisWorkspace).
 */
export async function joinWithNewPassword(
  services: Services,
  token: string,
  password: string,
): Promise<InvitationOutcome> {
  const open = await openInvitation(services, token);
  if (!open) return { type: 'spent' };
  const outcome = await withTransaction(services.pool, async (sql): Promise<InvitationOutcome> => {
    const now = services.now();
    await sql.query('SELECT id FROM staff_accounts WHERE id = $1 FOR UPDATE', [open.account.id]);
    if ((await credentialedEmails(sql, [open.account.email])).has(open.account.email))
      return { type: 'existing_account' };
    if (!(await openToThisWorkspace(sql, open.account.email, open.workspace.id))) return { type: 'member_elsewhere' };
    const used = await consumeOneTimeToken(sql, 'invitation', token, now);
    if (!used || used.account_id !== open.account.id) return { type: 'spent' };
    await setPassword(sql, used.account_id, password, now);
    await sql.query('DELETE FROM staff_sessions WHERE account_id = $1', [used.account_id]);
    return { type: 'joined', accountId: used.account_id, workspace: open.workspace, member: open.invitee };
  });
  if (outcome.type !== 'joined') return outcome;
  // A member who had never signed in is one already; an invitee accepts by this link.
  if (!open.invitee.pending) return outcome;
  return answer(services, open.workspace.id, open.account, 'accept', 'link');
}

/**
 * An existing account answers an invitation, signed in as the account the invitation names: through the link (used
 * up by the answer) or on its workspace list (`sign_in` invitations only to accept; any to decline).
 */
export async function answerInvitation(
  services: Services,
  signedInAccountId: string,
  o: { answer: 'accept' | 'decline' } & ({ token: string } | { workspaceId: string }),
): Promise<InvitationOutcome> {
  const account = await findAccount(services.pool, signedInAccountId);
  if (!account) return { type: 'spent' };
  if ('token' in o) {
    const held = await peekOneTimeToken(services.pool, 'invitation', o.token, services.now());
    // Bound to its email: another signed-in account cannot answer it (the page says so before this).
    if (!held?.tenant_id || held.account_id !== account.id) return { type: 'spent' };
    const used = await consumeOneTimeToken(services.pool, 'invitation', o.token, services.now());
    if (!used?.tenant_id) return { type: 'spent' };
    return answer(services, used.tenant_id, account, o.answer, 'link');
  }
  return answer(services, o.workspaceId, account, o.answer, 'sign_in');
}

async function answer(
  services: Services,
  workspaceId: string,
  account: Pick<StaffAccount, 'id' | 'email'>,
  reply: 'accept' | 'decline',
  via: 'link' | 'sign_in',
): Promise<InvitationOutcome> {
  try {
    const changed = await changeMembers(
      services.pool,
      workspaceId,
      reply === 'accept' ? { type: 'accept', email: account.email, via } : { type: 'decline', email: account.email },
      services.now(),
    );
    return reply === 'accept'
      ? { type: 'joined', accountId: account.id, workspace: changed.workspace, member: changed.user }
      : { type: 'declined', workspace: changed.workspace };
  } catch (error) {
    if (error instanceof MemberRefusal) return { type: 'spent' };
    throw error;
  }
}
