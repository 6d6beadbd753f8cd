import { decideConversion } from '../../domain/leads/decide.js';
import { leadStream } from '../../domain/leads/lead.js';
import type { StoreTransaction } from '../../events/event-store.js';
import { findLeadRow } from '../../projections/leads-queries.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { NotFoundError } from '../errors.js';

/**
 * Marks a lead converted inside the caller's conversion command: appends lead.converted (the Lead in its converted,
 * locked state, plus the application) to `lead-<leadId>`, which the caller names in runCommand. 404 not_found when
 * the lead is not in the transaction's workspace and mode; 409 lead_locked when it was already converted.
 */
export async function markLeadConverted(
  tx: StoreTransaction,
  workspace: Workspace,
  leadId: string,
  application: { id: string; case_ref: string },
): Promise<void> {
  if (workspace.id !== tx.context.tenantId) throw new NotFoundError('lead');
  const row = await findLeadRow(tx.sql, tx.context.tenantId, tx.context.sandbox, leadId);
  if (!row) throw new NotFoundError('lead');
  await tx.append(leadStream(leadId), row.revision, decideConversion(row.lead, application, tx.context.now));
}
