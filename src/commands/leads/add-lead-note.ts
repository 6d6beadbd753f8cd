import { decideNote } from '../../domain/leads/decide.js';
import { leadStream } from '../../domain/leads/lead.js';
import type { CommandContext } from '../../events/types.js';
import type { AppServices } from '../../bootstrap.js';
import { findLeadRow } from '../../projections/leads-queries.js';
import { runLeadWrite } from './lead-write.js';
import { NotFoundError } from '../errors.js';
import { lockPerson } from '../person-locks.js';

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
  await runLeadWrite(services, ctx, [stream], async (tx) => {
    await lockPerson(tx, request.leadId);
    const row = await findLeadRow(tx.sql, request.tenantId, false, request.leadId);
    if (!row) throw new NotFoundError('lead');
    await tx.append(stream, row.revision, decideNote(request.note, ctx.metadata.actor, tx.context.now));
  });
}
