import { decide, type LeadCommand } from '../../domain/leads/decide.js';
import { toLeadEvent, type LeadEvent } from '../../domain/leads/events.js';
import { evolve } from '../../domain/leads/evolve.js';
import { leadStream, type Lead } from '../../domain/leads/lead.js';
import type { StoreTransaction } from '../../events/event-store.js';
import { findLeadRow } from '../../projections/leads-queries.js';
import { commandHandler, type CommandAt, type Handled, type Loaded } from '../command-handler.js';
import { NotFoundError } from '../errors.js';
import { lockPerson } from '../person-locks.js';

/*
 * The lead through the shared command handler, like tasks, invoices, documents and applications. Two differences,
 * both in what the aggregate hands the handler: the lead's state is its read-model row (one row at the stream's last
 * revision, which the lead projection writes in the same transaction as every append), and the person's lock is the
 * lead row itself. Every command runs inside a lead write (runLeadWrite: the sync gate and the transaction's time),
 * so callers use `handleLeadCommandIn` inside it rather than the handler's own `handle`.
 *
 * Two lead commands keep paths of their own. Capture (capture-lead.ts) creates the stream, so there is nothing to
 * load: it looks the person up by phone and email, takes the Idempotency-Key's and the duplicate's locks and counts
 * the quota before it decides. Erasure (erase-lead.ts) takes the person's lock alone (FOR UPDATE, not the writes'
 * shared one), appends only if the lead was not erased before, and scrubs copies outside the log; both still decide
 * through the lead's `decide`.
 */

/** The lead's row under the person's lock (FOR KEY SHARE), in the transaction's workspace and mode; 404 when none. */
async function loadLead(tx: StoreTransaction, id: string): Promise<Loaded<Lead>> {
  const { tenantId, sandbox } = tx.context;
  await lockPerson(tx, id);
  const row = await findLeadRow(tx.sql, tenantId, sandbox, id);
  if (!row) throw new NotFoundError('lead');
  return { state: row.lead, revision: row.revision };
}

const leads = commandHandler<Lead, LeadEvent, LeadCommand>({
  name: 'lead',
  stream: leadStream,
  read: toLeadEvent,
  // A loaded lead stays a lead: only a timeline event before any lead (which no stream holds) evolves to nothing.
  evolve: (state, event) => evolve(state, event) ?? state!,
  decide,
  load: loadLead,
});

export type LeadResult = Handled<Lead, LeadEvent>;

/** One command on an existing lead inside a lead write that named its stream: lock, load, decide, append. */
export function handleLeadCommandIn(tx: StoreTransaction, id: string, command: CommandAt<LeadCommand>) {
  return leads.handleIn(tx, id, command);
}

/** As handleLeadCommandIn, with `before` run once the lead is loaded: false ends the step unchanged (undefined). */
export function handleLeadCommandIf(
  tx: StoreTransaction,
  id: string,
  command: CommandAt<LeadCommand>,
  before: (lead: Lead) => Promise<boolean>,
): Promise<LeadResult | undefined> {
  return leads.handleIn(tx, id, command, before);
}
