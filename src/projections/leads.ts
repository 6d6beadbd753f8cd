import { LEAD_FIELDS, LeadEventType, type Lead } from '../domain/leads/lead.js';
import { leadFromPayload } from '../domain/leads/evolve.js';
import type { RecordedEvent } from '../events/types.js';
import type { SqlRunner } from '../storage/write-batch.js';
import type { Projection } from './projection.js';

/** True when the payload holds the Lead's fields and nothing else, so it can serve as the stored body as it is. */
function isExactlyLead(payload: Record<string, unknown>): boolean {
  const keys = Object.keys(payload);
  return keys.length === LEAD_FIELDS.length && LEAD_FIELDS.every((field) => Object.hasOwn(payload, field));
}

const PUBLIC = new Set<string>([LeadEventType.updated, LeadEventType.assigned, LeadEventType.lost, LeadEventType.converted]);

/** The `leads` table: one row per lead, the public shape in `body`, kept at the stream's last revision. */
export const leadsProjection: Projection = {
  name: 'leads',
  tables: ['leads'],
  eventTypes: Object.values(LeadEventType),
  async apply(sql: SqlRunner, event: RecordedEvent): Promise<void> {
    if (event.type === LeadEventType.created) {
      const payload = event.data.payload as Record<string, unknown>;
      const lead = leadFromPayload(payload);
      const columns = [lead.id, event.tenantId, event.sandbox, event.revision, lead.phone, lead.email, lead.branch.id, lead.owner?.id ?? null, lead.converted, lead.created_at, lead.updated_at];
      // When the payload is exactly the Lead (as captures write it), the body is copied from the log row written just
      // before instead of being sent twice; an older payload goes in as the Lead it reads as.
      await sql.query(
        `INSERT INTO leads (id, tenant_id, sandbox, revision, phone, email, branch_id, owner_id, converted, created_at, updated_at, body)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, coalesce($12::jsonb, e.data->'payload') FROM events e WHERE e.id = $13`,
        [...columns, isExactlyLead(payload) ? null : JSON.stringify(lead), event.id],
      );
      return;
    }
    const id = event.streamId.slice('lead-'.length);
    if (PUBLIC.has(event.type)) {
      const lead: Lead = leadFromPayload(event.data.payload as Record<string, unknown>);
      await sql.query('UPDATE leads SET revision = $2, owner_id = $3, converted = $4, updated_at = $5, body = $6 WHERE id = $1', [
        id,
        event.revision,
        lead.owner?.id ?? null,
        lead.converted,
        lead.updated_at,
        JSON.stringify(lead),
      ]);
      return;
    }
    // Timeline entries (enquiries, notes) move only the activity time, which is also a change a sync must see. They
    // move it forward only, as evolve() does: an enquiry can land after a PATCH that took a later time.
    const at = String(event.data.at);
    await sql.query(
      `UPDATE leads SET revision = $2, updated_at = greatest(updated_at, $3::timestamptz),
              body = body || jsonb_build_object(
                'updated_at', CASE WHEN $3::timestamptz > updated_at THEN $4::text ELSE body->>'updated_at' END,
                'last_activity_at', CASE WHEN body->>'last_activity_at' IS NULL OR $3::timestamptz > (body->>'last_activity_at')::timestamptz
                                         THEN $4::text ELSE body->>'last_activity_at' END)
        WHERE id = $1`,
      [id, event.revision, at, at],
    );
  },
};
