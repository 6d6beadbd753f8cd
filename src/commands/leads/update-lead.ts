import type { LeadCommand, LeadPatch } from '../../domain/leads/decide.js';
import { leadStream, type Lead } from '../../domain/leads/lead.js';
import type { CommandContext } from '../../events/types.js';
import type { StoreTransaction } from '../../events/event-store.js';
import type { AppServices } from '../../bootstrap.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { runLeadWrite } from './lead-write.js';
import { NotFoundError } from '../errors.js';
import { handleLeadCommandIf, handleLeadCommandIn } from './lead-commands.js';

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
  const stream = leadStream(request.leadId);
  const ctx = request.context(services.now());
  return runLeadWrite(services, ctx, [stream], async (tx) => (await updateLeadIn(tx, request))!.lead);
}

/**
 * The update inside a lead write's transaction (the gate and the stream's lock held), through the lead's command
 * handler: the single edit above and each item of a bulk action (src/commands/bulk) run this same step. `before` runs
 * once the lead is read and locked and may end the step without a change (returns false), as a bulk item another
 * worker already did.
 */
export async function updateLeadIn(
  tx: StoreTransaction,
  request: Omit<LeadUpdateRequest, 'context'>,
  before?: (lead: Lead) => Promise<boolean>,
): Promise<{ lead: Lead; events: number } | undefined> {
  const { workspace, leadId, patch } = request;
  if (workspace.id !== tx.context.tenantId || request.sandbox !== tx.context.sandbox) throw new NotFoundError('lead');
  const command = (now: Date): LeadCommand => ({
    type: 'update',
    patch,
    settings: workspace.settings,
    author: tx.context.metadata.actor,
    now,
  });
  const handled = before
    ? await handleLeadCommandIf(tx, leadId, command, before)
    : await handleLeadCommandIn(tx, leadId, command);
  return handled && { lead: handled.state, events: handled.events.length };
}
