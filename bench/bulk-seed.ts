import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { decideCapture } from '../src/domain/leads/decide.js';
import { leadStream, type Lead, type Named } from '../src/domain/leads/lead.js';
import { contentDigest, GENESIS, link } from '../src/events/chain.js';
import type { Actor } from '../src/events/types.js';
import { withTransaction } from '../src/storage/postgres.js';
import type { Workspace } from '../src/workspaces/workspace.js';
import type { LeadSubmission } from '../src/domain/leads/submission.js';
import { newId } from '../src/shared/ids.js';

/**
 * The benchmark's seeding only, never a real import: many synthetic leads in one transaction, written as their
 * lead.created events and `leads` rows with two multi-row inserts. Their personal values are stored unsealed with no
 * data key row, so erasure could not shred them; the service writes leads only through captureLead. It skips
 * duplicate detection, idempotency and the quota; the unique phone and email indexes still refuse a repeated person.
 */
// Every event of the bulk path is a lead's first: the capture decision's one event for a new lead.
const CREATED = 'lead.created';

export async function bulkImportLeads(
  pool: pg.Pool,
  workspace: Workspace,
  sandbox: boolean,
  source: Named,
  actor: Actor,
  items: { submission: LeadSubmission; at: Date }[],
): Promise<Lead[]> {
  const leads: Lead[] = [];
  const events: { id: string; stream: string; data: string; at: Date; hash: string }[] = [];
  const metadata = { actor, correlation_id: randomUUID(), bulk_import: true };
  for (const item of items) {
    const decision = decideCapture({
      leadId: newId(),
      submission: item.submission,
      existing: null,
      source,
      consentSource: source.key,
      settings: workspace.settings,
      now: item.at,
    });
    leads.push(decision.lead);
    const event = decision.events[0]!;
    if (event.type !== CREATED) throw new Error(`A new lead's decision gave ${event.type}`);
    const id = newId();
    const stream = leadStream(decision.lead.id);
    const digest = contentDigest({
      id,
      streamId: stream,
      type: CREATED,
      tenantId: workspace.id,
      sandbox,
      data: event.data,
      metadata,
      createdAt: item.at,
    });
    const hash = link(GENESIS, 0, digest).toString('hex');
    events.push({ id, stream, data: JSON.stringify(event.data), at: item.at, hash });
  }
  await withTransaction(pool, async (sql) => {
    await sql.query(
      `INSERT INTO events (id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at, hash)
       SELECT id, stream_id, 0, $8, $4, $5, data, $6, created_at, decode(hash, 'hex')
         FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $7::timestamptz[], $9::text[])
              AS e(id, stream_id, data, created_at, hash)`,
      [
        events.map((e) => e.id),
        events.map((e) => e.stream),
        events.map((e) => e.data),
        workspace.id,
        sandbox,
        JSON.stringify(metadata),
        events.map((e) => e.at),
        CREATED,
        events.map((e) => e.hash),
      ],
    );
    await sql.query(
      `INSERT INTO leads (id, tenant_id, sandbox, revision, phone, email, branch_id, owner_id, converted, created_at, updated_at, body)
       SELECT id, $2, $3, 0, phone, email, branch_id, owner_id, false, at, at, body
         FROM unnest($1::uuid[], $4::text[], $5::text[], $6::uuid[], $7::uuid[], $8::timestamptz[], $9::json[])
              AS l(id, phone, email, branch_id, owner_id, at, body)`,
      [
        leads.map((l) => l.id),
        workspace.id,
        sandbox,
        leads.map((l) => l.phone),
        leads.map((l) => l.email),
        leads.map((l) => l.branch.id),
        leads.map((l) => l.owner?.id ?? null),
        leads.map((l) => l.created_at),
        leads.map((l) => JSON.stringify(l)),
      ],
    );
  });
  return leads;
}
