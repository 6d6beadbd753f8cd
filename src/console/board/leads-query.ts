import type { Lead } from '../../domain/leads/lead.js';
import type { Queryable } from '../../storage/postgres.js';
import { leadConditions, type BoardFilter } from './filter.js';

/**
 * The lead board's rows: the workspace's live leads not yet converted (a converted lead's work goes on in its
 * application, on the applications board), by stage, under the board's filters.
 */
function scoped(tenantId: string, filter: BoardFilter) {
  const values: unknown[] = [tenantId];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  const where = ['l.tenant_id = $1', 'l.sandbox = false', 'l.converted = false', ...leadConditions(filter, 'l', param)];
  return { values, param, where: where.join(' AND ') };
}

/** Up to this many leads of a stage are counted exactly (as the lists count); above it, the planner's estimate. */
export const EXACT_COUNT_LIMIT = 10_000;

/** A column's count: exact, or the planner's estimate of a stage holding more than EXACT_COUNT_LIMIT. */
export interface StageCount {
  n: number;
  exact: boolean;
}

/**
 * How many leads each stage holds under the filter, by stage key. Each stage is counted off `leads_board`
 * (migration 174) by an index-only scan that stops at EXACT_COUNT_LIMIT + 1 entries, so a board costs at most that
 * many index entries per column however many leads the workspace has; a stage with more is estimated by the planner
 * (the board columns have statistics of their own), never below the bound.
 */
export async function leadStageCounts(
  sql: Queryable,
  tenantId: string,
  filter: BoardFilter,
  stageKeys: readonly string[],
): Promise<Map<string, StageCount>> {
  const q = scoped(tenantId, filter);
  const stages = q.param(stageKeys);
  const cap = q.param(EXACT_COUNT_LIMIT + 1);
  const counted = await sql.query<{ key: string; n: number }>(
    `SELECT c.key, (SELECT count(*)::int FROM (SELECT 1 FROM leads l WHERE ${q.where} AND l.stage_key = c.key LIMIT ${cap}) s) AS n
       FROM unnest(${stages}::text[]) AS c(key)`,
    q.values,
  );
  const counts = new Map<string, StageCount>();
  for (const { key, n } of counted.rows) {
    if (n <= EXACT_COUNT_LIMIT) counts.set(key, { n, exact: true });
    else
      counts.set(key, { n: Math.max(EXACT_COUNT_LIMIT + 1, await estimate(sql, tenantId, filter, key)), exact: false });
  }
  return counts;
}

/** The planner's estimate of a stage's leads under the filter (the query is planned, not run). */
async function estimate(sql: Queryable, tenantId: string, filter: BoardFilter, stageKey: string): Promise<number> {
  const q = scoped(tenantId, filter);
  const stage = q.param(stageKey);
  const plan = await sql.query<{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }>(
    `EXPLAIN (FORMAT JSON) SELECT 1 FROM leads l WHERE ${q.where} AND l.stage_key = ${stage}`,
    q.values,
  );
  return Math.round(plan.rows[0]!['QUERY PLAN'][0].Plan['Plan Rows']);
}

/**
 * The first `limit` leads of each stage under the filter, in the list's order (most recently changed first). Each
 * stage's ids come off `leads_board` in that order, its filter checked on the index entries; then only the leads
 * shown are read whole.
 */
export async function leadCards(
  sql: Queryable,
  tenantId: string,
  filter: BoardFilter,
  stageKeys: readonly string[],
  limit: number,
): Promise<Map<string, Lead[]>> {
  const q = scoped(tenantId, filter);
  const stages = q.param(stageKeys);
  const max = q.param(limit);
  const result = await sql.query<{ key: string; body: Lead }>(
    `SELECT c.key, b.body
       FROM unnest(${stages}::text[]) WITH ORDINALITY AS c(key, ord)
       CROSS JOIN LATERAL (
         SELECT l.id, l.updated_at FROM leads l
          WHERE ${q.where} AND l.stage_key = c.key
          ORDER BY l.updated_at DESC, l.id DESC LIMIT ${max}
       ) x
       JOIN leads b ON b.id = x.id AND b.tenant_id = $1
      ORDER BY c.ord, x.updated_at DESC, x.id DESC`,
    q.values,
  );
  const cards = new Map<string, Lead[]>(stageKeys.map((k) => [k, []]));
  for (const row of result.rows) cards.get(row.key)?.push(row.body);
  return cards;
}
