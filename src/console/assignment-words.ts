import type { WorkspaceUser } from '../workspaces/workspace.js';

/** The rule of auto-assignment in words, as the Settings and Members pages say it (src/domain/leads/assignment.ts). */
export const AUTO_ASSIGNMENT_RULE =
  'New leads are given automatically to an active member of the lead’s branch who can sign in (counsellors first). ' +
  'Members who cannot sign in yet (invited and not accepted, or without a password or passkey) get none, unless ' +
  'nobody in the branch can sign in yet.';

/** Whether auto-assignment passes this member over: they cannot sign in while someone of their branch can. */
export function passedOverForLeads(
  user: WorkspaceUser,
  users: readonly WorkspaceUser[],
  canSignIn: ReadonlySet<string>,
): boolean {
  if (!user.active) return false;
  if (user.pending) return true;
  if (canSignIn.has(user.email.toLowerCase())) return false;
  return users.some(
    (u) => u.active && !u.pending && u.branch_id === user.branch_id && canSignIn.has(u.email.toLowerCase()),
  );
}
