import { idOfStream } from '../domain/streams.js';
import { toLeadEvent } from '../domain/leads/events.js';
import { leadFromPayload } from '../domain/leads/evolve.js';
import { LeadEventType, type Lead } from '../domain/leads/lead.js';
import type { RecordedEvent } from '../events/types.js';
import type { Writer } from '../storage/postgres.js';
import type { Projection } from './projection.js';

/** The `leads` table: one row per lead, the public shape in `body`, kept at the stream's last revision. */
export const leadsProjection: Projection = {
  name: 'leads',
  tables: ['leads'],
  eventTypes: Object.values(LeadEventType),
  async apply(sql: Writer, recorded: RecordedEvent): Promise<void> {
    const event = toLeadEvent(recorded);
    const id = idOfStream('lead', recorded.streamId);
    switch (event.type) {
      case LeadEventType.created:
        return insertLead(sql, recorded, leadFromPayload(event.data.payload));
      case LeadEventType.updated:
      case LeadEventType.assigned:
      case LeadEventType.lost:
      case LeadEventType.converted:
        return replaceLead(sql, recorded.tenantId, id, recorded.revision, leadFromPayload(event.data.payload));
      case LeadEventType.enquiryReceived:
      case LeadEventType.noteAdded:
        return touchLead(sql, recorded.tenantId, id, recorded.revision, event.data.at);
      default: {
        const unknown: never = event;
        throw new Error(`Unknown lead event ${JSON.stringify(unknown)}`);
      }
    }
  },
};

function insertLead(sql: Writer, event: RecordedEvent, lead: Lead): void {
  const columns = [
    lead.id,
    event.tenantId,
    event.sandbox,
    event.revision,
    lead.phone,
    lead.email,
    lead.branch.id,
    lead.owner?.id ?? null,
    lead.converted,
    lead.created_at,
    lead.updated_at,
  ];
  // The body is the Lead's JSON text, its fields in the spec's order (the column is json: kept as written).
  sql.send(
    `INSERT INTO leads (id, tenant_id, sandbox, revision, phone, email, branch_id, owner_id, converted, created_at, updated_at, body)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [...columns, JSON.stringify(lead)],
  );
}

function replaceLead(sql: Writer, tenantId: string, id: string, revision: number, lead: Lead): void {
  sql.send(
    'UPDATE leads SET revision = $2, owner_id = $3, converted = $4, updated_at = $5, body = $6 WHERE id = $1 AND tenant_id = $7',
    [id, revision, lead.owner?.id ?? null, lead.converted, lead.updated_at, JSON.stringify(lead), tenantId],
  );
}

/**
 * Timeline entries (enquiries, notes) move only the activity time, which is also a change a sync must see. They move
 * it forward only, as evolve() does: an enquiry can land after a PATCH that took a later time. The body is rewritten
 * field by field in its own order and format, changing only those two values.
 */
function touchLead(sql: Writer, tenantId: string, id: string, revision: number, at: string): void {
  sql.send(
    `UPDATE leads SET revision = $2, updated_at = greatest(updated_at, $3::timestamptz),
              body = (SELECT ('{' || string_agg(to_json(f.k)::text || ':' || CASE
                                WHEN f.k = 'updated_at' AND $3::timestamptz > leads.updated_at THEN to_json($4::text)::text
                                WHEN f.k = 'last_activity_at' AND (f.v::text = 'null' OR $3::timestamptz > (f.v #>> '{}')::timestamptz) THEN to_json($4::text)::text
                                ELSE f.v::text END, ',' ORDER BY f.n) || '}')::json
                        FROM json_each(leads.body) WITH ORDINALITY AS f(k, v, n))
        WHERE id = $1 AND tenant_id = $5`,
    [id, revision, at, at, tenantId],
  );
}
