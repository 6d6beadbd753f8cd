import type { AppServices } from '../../bootstrap.js';
import { decideLead } from '../../domain/leads/decide.js';
import { leadStream } from '../../domain/leads/lead.js';
import type { CommandContext, RecordedEvent } from '../../events/types.js';
import { SEALED_FIELD } from '../../events/personal-data.js';
import { saysPersonalData } from '../../events/personal-fields.js';
import type { Queryable } from '../../storage/postgres.js';
import { settleTime, writeIntent } from '../../leads/write-intents.js';
import { findLeadRow } from '../../projections/leads-queries.js';
import type { LeadErasure } from '../../schemas/lead.js';
import { applicationStream } from '../applications/load-application.js';
import { documentStream } from '../../projections/documents.js';
import { invoiceStream } from '../../projections/invoices.js';
import { taskStream } from '../../projections/tasks.js';
import { NotFoundError } from '../errors.js';
import { runCommand } from '../run-command.js';
import { eraseKeys, erasedAt, liveKeys, ownedBy, reprojectErased, scrubCopies } from './erase-copies.js';
import { recordErasure } from '../export/erasure-ledger.js';

/** An erasure as the admin route or the CLI parsed it. */
export interface LeadErasureRequest {
  tenantId: string;
  sandbox: boolean;
  leadId: string;
  /** The command context for the time the write was registered at (the staff member as actor). */
  context: (now: Date) => CommandContext;
}

/**
 * Erases a person (a lead, the applications converted from it and the documents of both) by crypto-shredding, in one transaction holding
 * their streams' locks: appends the lead's erasure (a lead.updated with every personal field erased), deletes the
 * streams' data keys (so the sealed personal values of every earlier event can no longer be opened), and scrubs the
 * copies outside the log (read models, idempotency answers, webhook delivery bodies and receiver answers). Erasing an
 * erased lead answers the first erasure's time and appends nothing; should a case have been opened from the erased
 * lead since (its stream got a key), that key is deleted and its copies scrubbed.
 */
export async function eraseLead(
  services: Pick<AppServices, 'store' | 'pool' | 'now' | 'documents'>,
  request: LeadErasureRequest,
): Promise<LeadErasure> {
  const { tenantId, sandbox, leadId } = request;
  const clock = services.now;
  const stream = leadStream(leadId);
  // The applications hanging off the lead, to lock their streams too (a conversion locks the lead's stream, so none
  // can be added while this transaction holds it; one added before is found here).
  const applications = await services.pool.query<{ id: string }>(
    'SELECT id FROM applications WHERE tenant_id = $1 AND sandbox = $2 AND lead_id = $3',
    [tenantId, sandbox, leadId],
  );
  // What hangs off the lead and its cases: documents, tasks and invoices, whose personal values (file names, titles,
  // line descriptions, reasons) are sealed under their own streams' keys, filed under this person. The documents'
  // files are deleted once the erasure has committed.
  const owned = await ownedBy(
    services.pool,
    tenantId,
    sandbox,
    leadId,
    applications.rows.map((a) => a.id),
  );
  const documentIds = owned.documents;
  const streams = [
    stream,
    ...applications.rows.map((a) => applicationStream(a.id)),
    ...owned.documents.map(documentStream),
    ...owned.tasks.map(taskStream),
    ...owned.invoices.map(invoiceStream),
  ];
  const intent = writeIntent(tenantId, sandbox, clock);
  const erasure = await runCommand(
    services.store,
    request.context(intent.at),
    streams,
    async (tx) => {
      const row = await findLeadRow(tx.sql, tenantId, sandbox, leadId);
      if (!row) throw new NotFoundError('lead');
      const before = await erasedAt(tx.sql, tenantId, leadId);
      const live = await liveKeys(tx.sql, tenantId, leadId);
      const now = settleTime(tx, intent, clock);
      const answer = async (streamsErased: number): Promise<LeadErasure> => ({
        lead_id: leadId,
        erased_at: (before ?? now).toISOString(),
        erased_now: before === undefined,
        streams: streamsErased,
        plaintext_events: await plaintextEvents(tx.sql, streams),
      });
      if (before && live === 0) return answer(0);
      const events: RecordedEvent[] = [];
      for (const s of streams) events.push(...(await tx.readStream(s)));
      // Erased before, yet with a live key: a case opened from the erased lead since. Its keys go too, no new event.
      if (!before) await tx.append(stream, row.revision, decideLead(row.lead, { type: 'erase', now }));
      await eraseKeys(tx.writes, { tenantId, personId: leadId, streams, now });

      // The erasure ledger (issue 29, item 5): exports carry it, imports apply it, so no restore undoes this.
      await recordErasure(tx.writes, tenantId, leadId, before ?? now);

      await scrubCopies(tx.writes, { tenantId, sandbox, leadId, events: [...events, ...tx.appended] });
      await reprojectErased(tx, owned);
      return answer(before ? live : streams.length);
    },
    { opening: intent.registration },
  );
  // After COMMIT: a crash before this leaves files whose names and events are already unreadable; erasing again
  // (idempotent) deletes them.
  for (const id of documentIds) {
    await services.documents.storage.remove(id);
    await services.documents.storage.discard(id);
  }
  return erasure;
}

/** Events of these streams that hold personal values in the clear (written before encryption). */
async function plaintextEvents(sql: Queryable, streams: string[]): Promise<number> {
  const result = await sql.query<{ type: string; data: Record<string, unknown> }>(
    `SELECT type, data FROM events WHERE stream_id = ANY($1::text[]) AND NOT data ? '${SEALED_FIELD}'`,
    [streams],
  );
  return result.rows.filter((row) => saysPersonalData(row.type, row.data)).length;
}
