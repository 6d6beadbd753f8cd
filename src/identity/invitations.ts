import type { AppServices } from '../bootstrap.js';
import { withTransaction } from '../storage/postgres.js';
import type { Workspace, WorkspaceUser } from '../workspaces/workspace.js';
import { ensureAccount, setPassword } from './accounts.js';
import { staffMailer } from './mail.js';
import { changeMembers } from './members.js';
import { consumeOneTimeToken, issueOneTimeToken, peekOneTimeToken, type OneTimePurpose } from './one-time-tokens.js';
import type { Role } from './permissions.js';
import { IDENTITY_POLICY } from './policy.js';

type Services = Pick<AppServices, 'pool' | 'config' | 'now'>;

/** The console page a one-time token opens. */
export function oneTimeLink(services: Pick<AppServices, 'config'>, purpose: OneTimePurpose, token: string): string {
  const page = purpose === 'invitation' ? 'invitation' : 'reset';
  return `${services.config.publicBaseUrl}/console/${page}/${token}`;
}

/** Issues an invitation for a member (an account is made for their email) and mails its link. */
export async function sendInvitation(
  services: Services,
  workspace: Workspace,
  member: WorkspaceUser,
): Promise<{ link: string; mailed: boolean }> {
  const now = services.now();
  const account = await ensureAccount(services.pool, member, now);
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
    text: `You have been invited to ${workspace.name} as ${member.role}.\n\nChoose your password here (the link works once, for seven days):\n${link}\n`,
  });
  return { link, mailed };
}

/** Adds a member to the workspace (or makes a former one active again) and invites them. */
export async function inviteMember(
  services: Services,
  workspace: Workspace,
  person: { email: string; name: string; role: Role },
): Promise<{ member: WorkspaceUser; link: string; mailed: boolean }> {
  const changed = await changeMembers(services.pool, workspace.id, { type: 'invite', ...person }, services.now());
  return { member: changed.user, ...(await sendInvitation(services, changed.workspace, changed.user)) };
}

export function isUsableOneTimeToken(services: Services, purpose: OneTimePurpose, token: string) {
  return peekOneTimeToken(services.pool, purpose, token, services.now());
}

/** Uses an invitation or reset token to set the password; the account's id, or undefined when the token is spent. */
export async function completeWithPassword(
  services: Services,
  purpose: OneTimePurpose,
  token: string,
  password: string,
): Promise<string | undefined> {
  return withTransaction(services.pool, async (sql) => {
    const now = services.now();
    const used = await consumeOneTimeToken(sql, purpose, token, now);
    if (!used) return undefined;
    await setPassword(sql, used.account_id, password, now);
    // A new password ends every session it might have been stolen with.
    await sql.query('DELETE FROM staff_sessions WHERE account_id = $1', [used.account_id]);
    return used.account_id;
  });
}

/** The first owner of a workspace the operator created: their invitation. */
export async function inviteFirstOwner(
  services: Services,
  workspace: Workspace,
): Promise<{ email: string; link: string; mailed: boolean }> {
  const owner = workspace.settings.users.find((u) => u.role === 'owner' && u.active)!;
  return { email: owner.email, ...(await sendInvitation(services, workspace, owner)) };
}
