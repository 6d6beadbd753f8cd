import { leadFromPayload } from '../domain/leads/evolve.js';
import type { Lead } from '../domain/leads/lead.js';
import { leadJson } from '../schemas/lead-json.js';
import type { Queryable } from '../storage/postgres.js';

/**
 * How a stored lead body is read and written: the domain's reader (a field the body predates gets its default,
 * LEAD_FIELD_DEFAULTS) and the API's one serialiser. Tests pass a second version with a field added.
 */
export interface LeadCodec {
  read(body: Record<string, unknown>): Lead;
  json(lead: Lead): string;
}

export const CURRENT_LEAD_CODEC: LeadCodec = { read: leadFromPayload, json: leadJson };

/** Rows read and rewritten per statement. */
const PAGE = 500;

/**
 * Writes every stored lead body (`leads.body`) again through the one serialiser, so a field added to the Lead reaches
 * the rows written before it, with the default its old events read as: what a rebuild of the lead read model from
 * the log gives, without replaying the log or locking the events table. A migration runs it (its `run`, listing the
 * Lead's fields it was written for: test/projections/lead-rows.test.ts fails until the last such migration lists the
 * current ones). Rows whose text is already the serialiser's are left alone, so running it again changes nothing.
 * Pages by id; every workspace and mode, each row rewritten in place under its own key.
 */
export async function reserialiseLeadRows(
  sql: Queryable,
  codec: LeadCodec = CURRENT_LEAD_CODEC,
  page = PAGE,
): Promise<{ rows: number; rewritten: number }> {
  let rows = 0;
  let rewritten = 0;
  let after = '00000000-0000-0000-0000-000000000000';
  for (;;) {
    const read = await sql.query<{ id: string; tenant_id: string; text: string; body: Record<string, unknown> }>(
      'SELECT id, tenant_id, body::text AS text, body FROM leads WHERE id > $1 ORDER BY id LIMIT $2',
      [after, page],
    );
    if (read.rows.length === 0) break;
    rows += read.rows.length;
    after = read.rows[read.rows.length - 1]!.id;
    const changed = read.rows
      .map((r) => ({ id: r.id, tenant: r.tenant_id, text: codec.json(codec.read(r.body)), was: r.text }))
      .filter((r) => r.text !== r.was);
    if (changed.length === 0) continue;
    rewritten += changed.length;
    await sql.query(
      `UPDATE leads AS l SET body = v.body
         FROM unnest($1::uuid[], $2::uuid[], $3::json[]) AS v(id, tenant_id, body)
        WHERE l.id = v.id AND l.tenant_id = v.tenant_id`,
      [changed.map((r) => r.id), changed.map((r) => r.tenant), changed.map((r) => r.text)],
    );
  }
  return { rows, rewritten };
}
