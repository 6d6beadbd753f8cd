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
 * The owner of a new lead: among the branch's active counsellors (or, when it has none, its other active users),
 * ordered by email, the one picked by the lead id's hash. Leads spread evenly without a shared counter that every
 * capture in a workspace would have to wait on; null when the branch has no active user.
 */
export function chooseOwner(settings: LeadSettings, branchId: string, leadId: string): LeadStaffMember | null {
  const active = settings.users
    .filter((u) => u.active && !u.pending && u.branch_id === branchId)
    .sort((a, b) => a.email.localeCompare(b.email));
  const counsellors = active.filter((u) => u.role === 'counsellor');
  const pool = counsellors.length > 0 ? counsellors : active;
  if (pool.length === 0) return null;
  const bucket = createHash('sha256').update(leadId).digest().readUInt32BE(0);
  return pool[bucket % pool.length]!;
}
