import { leadStream } from '../../domain/leads/lead.js';
import type { CommandContext } from '../../events/types.js';
import type { AppServices } from '../../bootstrap.js';
import { runLeadWrite } from './lead-write.js';
import { NotFoundError } from '../errors.js';
import { handleLeadCommandIn } from './lead-commands.js';

export interface LeadNoteRequest {
  tenantId: string;
  leadId: string;
  note: string;
  context: (now: Date) => CommandContext;
}

/** A staff note on a lead's timeline, converted or not (the console's note form): lead.note_added, nothing else. */
export async function addLeadNote(
  services: Pick<AppServices, 'store' | 'now'>,
  request: LeadNoteRequest,
): Promise<void> {
  const stream = leadStream(request.leadId);
  const ctx = request.context(services.now());
  if (ctx.tenantId !== request.tenantId || ctx.sandbox) throw new NotFoundError('lead');
  await runLeadWrite(services, ctx, [stream], (tx) =>
    handleLeadCommandIn(tx, request.leadId, (now) => ({
      type: 'note',
      note: request.note,
      author: ctx.metadata.actor,
      now,
    })),
  );
}
