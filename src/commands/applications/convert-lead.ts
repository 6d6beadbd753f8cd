import { leadStream } from '../../domain/leads/lead.js';
import { caseRef, fold, decideOpen, workflowStages, type ApplicationState } from '../../domain/applications/index.js';
import type { EventStore } from '../../events/event-store.js';
import type { CommandContext } from '../../events/types.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { markLeadConverted } from '../leads/convert-lead.js';
import { runLeadWrite } from '../leads/lead-write.js';
import { lockPerson } from '../person-locks.js';
import { nextApplicationNumber } from './application-numbers.js';
import { applicationStream } from '../../domain/applications/index.js';
import { newId } from '../../shared/ids.js';

/**
 * Converts a lead into an application: takes the next case number, marks the lead converted and locked (lead.converted),
 * and opens the case at the first workflow stage (application.opened, application.stage_changed initial), all in one transaction.
 */
export async function convertLeadToApplication(
  services: { store: EventStore; now: () => Date },
  commandContext: CommandContext,
  workspace: Workspace,
  leadId: string,
): Promise<ApplicationState> {
  const id = newId();
  const stream = applicationStream(id);
  const context = commandContext;
  const workflow = workspace.settings.application_workflow;
  workflowStages(workflow); // refuses before a case number is taken
  // The lead's updated_at changes: a lead write (runLeadWrite), so lead syncs cannot pass it.
  return runLeadWrite(services, context, [leadStream(leadId), stream], async (tx) => {
    await lockPerson(tx, leadId);
    const number = await nextApplicationNumber(tx.sql, context.tenantId, context.sandbox);
    const now = tx.context.now;
    await markLeadConverted(tx, workspace, leadId, { id, case_ref: caseRef(number) });
    const events = decideOpen({ application_id: id, lead_id: leadId, number, workflow, now });
    await tx.append(stream, 'no_stream', events);
    return fold(events)!;
  });
}
