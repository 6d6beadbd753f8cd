import { idOfStream } from '../domain/streams.js';
import { toLeadEvent, type LeadEvent } from '../domain/leads/events.js';
import { evolve, leadFromPayload } from '../domain/leads/evolve.js';
import { LeadEventType, type Lead } from '../domain/leads/lead.js';
import type { RecordedEvent } from '../events/types.js';
import { leadJson } from '../schemas/lead-json.js';
import type { Queryable } from '../storage/postgres.js';
import { newAndStored, type FoldedRow, type FoldProjection, type FoldWriter, type StoredRow } from './fold.js';

/**
 * Per lead event type, whether it carries the whole Lead (the row as stored is then not read before it). Keyed by
 * every type of the union, so a new lead event does not compile until it says which it is.
 */
const WHOLE_LEAD: { readonly [K in LeadEvent['type']]: boolean } = {
  [LeadEventType.created]: true,
  [LeadEventType.updated]: true,
  [LeadEventType.assigned]: true,
  [LeadEventType.lost]: true,
  [LeadEventType.converted]: true,
  [LeadEventType.enquiryReceived]: false,
  [LeadEventType.noteAdded]: false,
};

/**
 * The `leads` table: one row per lead, the public shape in `body` (its JSON text from leadJson, the API's serialiser),
 * kept at the stream's last revision. Its triggers keep `lead_order` (the columns lists order by, migration 220), so
 * an update of the row changes no indexed column and stays HOT. A lead's events fold with the domain's evolve;
 * timeline entries (enquiries, notes) move only the activity times, forward only, so the row before them is read when
 * nothing before them here said the whole lead.
 */
export const leadsProjection: FoldProjection<Lead> = {
  name: 'leads',
  tables: ['leads', 'lead_order'],
  eventTypes: Object.values(LeadEventType),
  rowOf: (event) => idOfStream('lead', event.streamId),
  creates: (event) => event.type === LeadEventType.created,
  replaces: (event) => WHOLE_LEAD[toLeadEvent(event).type],
  load: loadLeads,
  evolve: (state: Lead | undefined, event: RecordedEvent) => evolve(state, toLeadEvent(event)),
  write(sql: FoldWriter, rows: readonly FoldedRow<Lead>[]): void {
    const { inserts, updates } = newAndStored(rows);
    if (inserts.length > 0) insertLeads(sql, inserts);
    if (updates.length > 0) updateLeads(sql, updates);
  },
};

async function loadLeads(sql: Queryable, rows: readonly StoredRow[]): Promise<Map<string, Lead>> {
  const result = await sql.query<{ id: string; body: Lead }>(
    `SELECT l.id, l.body FROM unnest($1::uuid[], $2::uuid[]) AS k(id, tenant_id)
       JOIN leads l ON l.id = k.id AND l.tenant_id = k.tenant_id`,
    [rows.map((r) => r.id), rows.map((r) => r.tenantId)],
  );
  // Read as a payload: a row written before one of the Lead's fields gets its default (LEAD_FIELD_DEFAULTS).
  return new Map(result.rows.map((r) => [r.id, leadFromPayload(r.body)]));
}

const LEAD_COLUMNS =
  'id, tenant_id, sandbox, revision, phone, email, branch_id, owner_id, converted, created_at, updated_at, body';

/** A new lead row's values, in LEAD_COLUMNS' order. */
function leadValues(r: FoldedRow<Lead>): unknown[] {
  const lead = r.state;
  return [
    lead.id,
    r.tenantId,
    r.sandbox,
    r.revision,
    lead.phone,
    lead.email,
    lead.branch.id,
    lead.owner?.id ?? null,
    lead.converted,
    lead.created_at,
    lead.updated_at,
    leadJson(lead),
  ];
}

/**
 * New rows in one statement: a command's one row with plain parameters (no arrays to write out and unpack: the
 * creation path), a replay's many as arrays unnested.
 */
function insertLeads(sql: FoldWriter, rows: readonly FoldedRow<Lead>[]): void {
  if (rows.length === 1) {
    sql.send(
      `INSERT INTO leads (${LEAD_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
      leadValues(rows[0]!),
      rows,
    );
    return;
  }
  const values = rows.map(leadValues);
  sql.send(
    `INSERT INTO leads (${LEAD_COLUMNS})
     SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::boolean[], $4::integer[], $5::text[], $6::text[], $7::uuid[],
                          $8::uuid[], $9::boolean[], $10::timestamptz[], $11::timestamptz[], $12::json[])`,
    values[0]!.map((_, column) => values.map((v) => v[column])),
    rows,
  );
}

/** A missing row (an event of a lead this database has no row of) is left missing, as an UPDATE of nothing. */
function updateLeads(sql: FoldWriter, rows: readonly FoldedRow<Lead>[]): void {
  if (rows.length === 1) {
    const r = rows[0]!;
    sql.send(
      `UPDATE leads SET revision = $3, owner_id = $4, converted = $5, updated_at = $6, body = $7
        WHERE id = $1 AND tenant_id = $2`,
      [
        r.id,
        r.tenantId,
        r.revision,
        r.state.owner?.id ?? null,
        r.state.converted,
        r.state.updated_at,
        leadJson(r.state),
      ],
      rows,
    );
    return;
  }
  sql.send(
    `UPDATE leads AS l SET revision = v.revision, owner_id = v.owner_id, converted = v.converted,
            updated_at = v.updated_at, body = v.body
       FROM unnest($1::uuid[], $2::uuid[], $3::integer[], $4::uuid[], $5::boolean[], $6::timestamptz[], $7::json[])
            AS v(id, tenant_id, revision, owner_id, converted, updated_at, body)
      WHERE l.id = v.id AND l.tenant_id = v.tenant_id`,
    [
      rows.map((r) => r.id),
      rows.map((r) => r.tenantId),
      rows.map((r) => r.revision),
      rows.map((r) => r.state.owner?.id ?? null),
      rows.map((r) => r.state.converted),
      rows.map((r) => r.state.updated_at),
      rows.map((r) => leadJson(r.state)),
    ],
    rows,
  );
}
