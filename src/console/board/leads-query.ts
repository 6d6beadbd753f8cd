import type { Lead } from '../../domain/leads/lead.js';
import type { Queryable } from '../../storage/postgres.js';
import { leadConditions, type BoardFilter } from './filter.js';

// The lead board's rows: the workspace's live leads not yet converted (a converted lead's work goes on in its
// application, on the applications board), by stage, under the board's filters.

/** Up to this many leads of a stage are read to count it; a stage with more is estimated (as the lists count). */
export const EXACT_COUNT_LIMIT = 10_000;

/** A column's count: exact, or an estimate for a stage holding more than EXACT_COUNT_LIMIT leads. */
export interface StageCount {
  n: number;
  exact: boolean;
}

/**
 * How many leads each stage holds under the filter, by stage key, reading at most EXACT_COUNT_LIMIT + 1 entries of
 * `leads_board` (migration 174; on lead_order since migration 220) per stage, newest first, by an index-only scan: so
 * a board costs the same however many leads the workspace has and whatever the filter. A stage of up to
 * EXACT_COUNT_LIMIT leads is counted exactly.
 * A larger one is estimated: its size by the planner (lead_order's `stage_key` column has statistics of its own),
 * times the share of the entries read that match the filter; never fewer than the cards that show.
 */
export async function leadStageCounts(
  sql: Queryable,
  tenantId: string,
  filter: BoardFilter,
  stageKeys: readonly string[],
): Promise<Map<string, StageCount>> {
  const values: unknown[] = [tenantId];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  const matching = leadConditions(filter, 'w', param);
  const stages = param(stageKeys);
  const cap = param(EXACT_COUNT_LIMIT + 1);
  const counted = await sql.query<{ key: string; read: number; matched: number }>(
    `SELECT c.key, s.read, s.matched
       FROM unnest(${stages}::text[]) AS c(key)
       CROSS JOIN LATERAL (
         SELECT count(*)::int AS read, count(*) FILTER (WHERE ${matching.length ? matching.join(' AND ') : 'true'})::int AS matched
           FROM (SELECT l.owner_id, l.branch_id, l.visa_type, l.country_interest FROM lead_order l
                  WHERE l.tenant_id = $1 AND l.sandbox = false AND l.converted = false AND l.stage_key = c.key
                  ORDER BY l.updated_at DESC, l.id DESC LIMIT ${cap}) w
       ) s`,
    values,
  );
  const counts = new Map<string, StageCount>();
  for (const { key, read, matched } of counted.rows) {
    if (read <= EXACT_COUNT_LIMIT) counts.set(key, { n: matched, exact: true });
    else {
      const size = Math.max(read, await stageSize(sql, tenantId, key));
      counts.set(key, { n: Math.round((matched / read) * size), exact: false });
    }
  }
  return counts;
}

/** The planner's estimate of a stage's live, unconverted leads (the query is planned, not run). */
async function stageSize(sql: Queryable, tenantId: string, stageKey: string): Promise<number> {
  const plan = await sql.query<{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }>(
    `EXPLAIN (FORMAT JSON) SELECT 1 FROM lead_order l
      WHERE l.tenant_id = $1 AND l.sandbox = false AND l.converted = false AND l.stage_key = $2`,
    [tenantId, stageKey],
  );
  return Math.round(plan.rows[0]!['QUERY PLAN'][0].Plan['Plan Rows']);
}

/**
 * The first `limit` leads of each stage under the filter, in the list's order (most recently changed first), among
 * the same newest EXACT_COUNT_LIMIT + 1 entries of `leads_board` its count reads (a rarer match further back is in
 * the list): their ids come off the index alone, the filter checked on its entries; then only the leads shown are
 * read whole.
 */
export async function leadCards(
  sql: Queryable,
  tenantId: string,
  filter: BoardFilter,
  stageKeys: readonly string[],
  limit: number,
): Promise<Map<string, Lead[]>> {
  const values: unknown[] = [tenantId];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  const matching = leadConditions(filter, 'w', param);
  const stages = param(stageKeys);
  const cap = param(EXACT_COUNT_LIMIT + 1);
  const max = param(limit);
  const result = await sql.query<{ key: string; body: Lead }>(
    `SELECT c.key, b.body
       FROM unnest(${stages}::text[]) WITH ORDINALITY AS c(key, ord)
       CROSS JOIN LATERAL (
         SELECT w.id, w.updated_at FROM (
           SELECT l.id, l.updated_at, l.owner_id, l.branch_id, l.visa_type, l.country_interest FROM lead_order l
            WHERE l.tenant_id = $1 AND l.sandbox = false AND l.converted = false AND l.stage_key = c.key
            ORDER BY l.updated_at DESC, l.id DESC LIMIT ${cap}
         ) w
          WHERE ${matching.length ? matching.join(' AND ') : 'true'}
          ORDER BY w.updated_at DESC, w.id DESC LIMIT ${max}
       ) x
       JOIN leads b ON b.id = x.id AND b.tenant_id = $1
      ORDER BY c.ord, x.updated_at DESC, x.id DESC`,
    values,
  );
  const cards = new Map<string, Lead[]>(stageKeys.map((k) => [k, []]));
  for (const row of result.rows) cards.get(row.key)?.push(row.body);
  return cards;
}
