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

/**
 * How many leads each stage holds under the filter, by stage key (a stage with none is absent). One index-only scan
 * of `leads_board` (migration 174): every column it reads is in that index, so no lead's row is read.
 */
export async function leadStageCounts(
  sql: Queryable,
  tenantId: string,
  filter: BoardFilter,
): Promise<Map<string, number>> {
  const q = scoped(tenantId, filter);
  const result = await sql.query<{ key: string | null; n: number }>(
    `SELECT l.stage_key AS key, count(*)::int AS n FROM leads l WHERE ${q.where} GROUP BY l.stage_key`,
    q.values,
  );
  return new Map(result.rows.map((r) => [r.key ?? '', r.n]));
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
