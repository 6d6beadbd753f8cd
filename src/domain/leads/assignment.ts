import { createHash } from 'node:crypto';
import type { LeadBranch, LeadSettings, LeadStaffMember } from './settings.js';

/** The branch of a new lead: the branch whose name or code equals the lead's city (ignoring case), else the first branch. */
export function chooseBranch(settings: LeadSettings, city: string | null): LeadBranch {
  const wanted = city?.trim().toLowerCase();
  const match = wanted
    ? settings.branches.find((b) => b.name.toLowerCase() === wanted || b.code.toLowerCase() === wanted)
    : undefined;
  return match ?? settings.branches[0]!;
}

/**
 * The owner of a new lead: among the branch's active members who can sign in (`canSignIn`: an account with a password
 * or a passkey), its counsellors (or, when it has none, its other members), ordered by email, the one picked by the
 * lead id's hash. Leads spread evenly without a shared counter that every capture in a workspace would have to wait
 * on. While nobody in the branch can sign in (a workspace fresh from its definition file), every active member of it
 * is a candidate, so leads are still spread; null when the branch has no active user.
 */
export function chooseOwner(
  settings: LeadSettings,
  branchId: string,
  leadId: string,
  canSignIn: (email: string) => boolean = () => true,
): LeadStaffMember | null {
  const active = settings.users
    .filter((u) => u.active && !u.pending && u.branch_id === branchId)
    .sort((a, b) => a.email.localeCompare(b.email));
  const signedUp = active.filter((u) => canSignIn(u.email.toLowerCase()));
  const candidates = signedUp.length > 0 ? signedUp : active;
  const counsellors = candidates.filter((u) => u.role === 'counsellor');
  const pool = counsellors.length > 0 ? counsellors : candidates;
  if (pool.length === 0) return null;
  const bucket = createHash('sha256').update(leadId).digest().readUInt32BE(0);
  return pool[bucket % pool.length]!;
}
