import type { AppServices } from '../../bootstrap.js';
import { decide } from '../../domain/leads/decide.js';
import { leadStream } from '../../domain/leads/lead.js';
import type { StoreTransaction } from '../../events/event-store.js';
import type { CommandContext } from '../../events/types.js';
import { findLeadRow } from '../../projections/leads-queries.js';
import type { LeadErasure } from '../../schemas/lead.js';
import { NotFoundError } from '../errors.js';
import { runLeadWrite } from './lead-write.js';
import { lockPersonToErase, passGate } from '../person-locks.js';
import {
  documentsOf,
  eraseKeys,
  erasedAt,
  eventsOf,
  forgetReadRows,
  liveKeys,
  personStreams,
  reproject,
  scrubDeliveries,
  scrubPersonRows,
  type PersonScope,
} from './erase-copies.js';
import { recordErasure } from '../export/erasure-ledger.js';

/** An erasure as the admin route or the CLI parsed it. */
export interface LeadErasureRequest {
  tenantId: string;
  sandbox: boolean;
  leadId: string;
  /** The command context for the time the write was registered at (the staff member as actor). */
  context: (now: Date) => CommandContext;
}

/** How many streams, and how many events, an erasure holds in memory at once. */
export const ERASURE_PAGE = { streams: 100, events: 500 };

/**
 * Erases a person (a lead, the applications converted from it and the documents, tasks and invoices of both) by
 * crypto-shredding, in one transaction holding the lead's stream lock and then the person's lock (FOR UPDATE on the
 * lead's row, which every write creating personal data for the person shares first: docs/decisions.md, "Erasure and
 * writes"). Under that lock it appends the lead's erasure (a lead.updated with every personal field erased), deletes
 * the data keys of every stream filed under the person, and then, page by page over the person's streams, scrubs the
 * copies outside the log (read models, idempotency answers, webhook delivery bodies and receiver answers). Erasing an
 * erased lead answers the first erasure's time and appends nothing, but deletes any key left and scrubs again.
 */
export async function eraseLead(
  services: Pick<AppServices, 'store' | 'pool' | 'now' | 'documents' | 'personalData'>,
  request: LeadErasureRequest,
): Promise<LeadErasure> {
  const { tenantId, sandbox, leadId } = request;
  const stream = leadStream(leadId);
  const scope: PersonScope = { tenantId, sandbox, personId: leadId };
  const erasure = await runLeadWrite(services, request.context(services.now()), [stream], async (tx) => {
    if (!(await lockPersonToErase(tx.sql, tenantId, sandbox, leadId))) throw new NotFoundError('lead');
    await passGate('erasure-locked', leadId);
    const row = await findLeadRow(tx.sql, tenantId, sandbox, leadId);
    if (!row) throw new NotFoundError('lead');
    const before = await erasedAt(tx.sql, tenantId, leadId);
    const live = await liveKeys(tx.sql, tenantId, leadId);
    const now = tx.context.now;
    if (!before) await tx.append(stream, row.revision, decide(row.lead, { type: 'erase', now }));
    await passGate('erasure-keys', leadId);
    await eraseKeys(tx.writes, { tenantId, personId: leadId, streams: [stream], now });
    await scrubPersonRows(tx.writes, { tenantId, sandbox, leadId });
    const scrubbed = await scrubStreams(tx, scope, services, now);
    // The erasure ledger: exports carry it and imports apply it, so no restore brings the person back.
    await recordErasure(tx.writes, tenantId, leadId, before ?? now);
    await passGate('erasure-commit', leadId);
    return {
      lead_id: leadId,
      erased_at: (before ?? now).toISOString(),
      erased_now: before === undefined,
      streams: before ? live : scrubbed.streams,
      plaintext_events: scrubbed.plaintext,
    };
  });
  // After COMMIT: a crash before this leaves files whose names and events are already unreadable; erasing again
  // deletes them.
  for await (const ids of documentsOf(services.pool, scope, ERASURE_PAGE.streams))
    for (const id of ids) {
      await services.documents.storage.remove(id);
      await services.documents.storage.discard(id);
    }
  return erasure;
}

/**
 * Page by page over the person's streams: gives each a key tombstone (a stream written before encryption has no key
 * row), scrubs the delivery bodies of its events, and projects its document, task or invoice again as it reads once
 * erased. Counts the streams and the events that hold personal values in the clear.
 */
async function scrubStreams(
  tx: StoreTransaction,
  scope: PersonScope,
  services: Pick<AppServices, 'personalData'>,
  now: Date,
): Promise<{ streams: number; plaintext: number }> {
  const keys = services.personalData;
  let streams = 0;
  let plaintext = 0;
  for await (const page of personStreams(tx.sql, scope, ERASURE_PAGE.streams)) {
    streams += page.length;
    await eraseKeys(tx.writes, { tenantId: scope.tenantId, personId: scope.personId, streams: page, now });
    await forgetReadRows(tx.writes, page);
    for await (const read of eventsOf(tx.sql, page, keys, ERASURE_PAGE.events)) {
      plaintext += read.plaintext;
      await scrubDeliveries(tx.writes, read.events);
      await reproject(tx.writes, read.events);
    }
  }
  return { streams, plaintext };
}
