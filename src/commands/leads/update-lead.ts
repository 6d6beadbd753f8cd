import { decideUpdate, type LeadPatch } from '../../domain/leads/decide.js';
import { evolve } from '../../domain/leads/evolve.js';
import { leadStream, type Lead } from '../../domain/leads/lead.js';
import type { CommandContext } from '../../events/types.js';
import type { AppServices } from '../../bootstrap.js';
import { findLeadRow } from '../../projections/leads-queries.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { runLeadWrite } from './lead-write.js';
import { NotFoundError } from '../errors.js';
import { lockPerson } from '../person-locks.js';

/** A PATCH /v1/leads/{id} as the route parsed it: the workspace and mode, the lead's id and the validated body. */
export interface LeadUpdateRequest {
  workspace: Workspace;
  sandbox: boolean;
  leadId: string;
  patch: LeadPatch;
  /** The command context for the time the write was registered at. */
  context: (now: Date) => CommandContext;
}

/**
 * PATCH /v1/leads/{id}: holding the lead's stream lock, reads the lead (404 not_found when the workspace and mode have
 * none with this id), decides and appends, and answers the lead as it is after. Simultaneous patches of one lead
 * therefore apply one after another, each to the lead the previous one left.
 */
export async function updateLead(
  services: Pick<AppServices, 'store' | 'now'>,
  request: LeadUpdateRequest,
): Promise<Lead> {
  const { workspace, sandbox, leadId, patch } = request;
  const stream = leadStream(leadId);
  const ctx = request.context(services.now());
  return runLeadWrite(services, ctx, [stream], async (tx) => {
    await lockPerson(tx, leadId);
    const row = await findLeadRow(tx.sql, workspace.id, sandbox, leadId);
    if (!row) throw new NotFoundError('lead');
    const events = decideUpdate({
      lead: row.lead,
      patch,
      settings: workspace.settings,
      author: ctx.metadata.actor,
      now: tx.context.now,
    });
    await tx.append(stream, row.revision, events);
    return events.reduce<Lead>((lead, event) => evolve(lead, event) ?? lead, row.lead);
  });
}
