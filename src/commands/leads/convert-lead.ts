import type { StoreTransaction } from '../../events/event-store.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { NotFoundError } from '../errors.js';
import { handleLeadCommandIn } from './lead-commands.js';

/**
 * Marks a lead converted inside the caller's conversion command: appends lead.converted (the Lead in its converted,
 * locked state, plus the application) to `lead-<leadId>`, which the caller names in runCommand, through the lead's
 * command handler. 404 not_found when the lead is not in the transaction's workspace and mode; 409 lead_locked when
 * it was already converted.
 */
export async function markLeadConverted(
  tx: StoreTransaction,
  workspace: Workspace,
  leadId: string,
  application: { id: string; case_ref: string },
): Promise<void> {
  if (workspace.id !== tx.context.tenantId) throw new NotFoundError('lead');
  await handleLeadCommandIn(tx, leadId, (now) => ({ type: 'convert', application, now }));
}
