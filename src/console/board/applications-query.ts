import type { CaseStage } from '../../domain/applications/types.js';
import type { Lead } from '../../domain/leads/lead.js';
import type { Queryable } from '../../storage/postgres.js';
import { leadConditions, type BoardFilter } from './filter.js';

/** An application as its card shows it. */
export interface ApplicationCardRow {
  id: string;
  case_ref: string;
  status: string;
  stages: CaseStage[];
  lead: Lead | null;
  /** The soonest due time of its open tasks. */
  follow_up: Date | null;
  /** When it last moved stage (its last application.stage_changed event). */
  stage_since: Date | null;
}

/**
 * The applications board's rows: the workspace's live cases (every status, as the list shows them), by the stage of
 * their status, filtered by their lead's owner, branch, visa type and country (the lead is joined only when filtered).
 */
function scoped(tenantId: string, filter: BoardFilter) {
  const values: unknown[] = [tenantId];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  const byLead = leadConditions(filter, 'l', param);
  const join = byLead.length ? 'JOIN leads l ON l.id = a.lead_id AND l.tenant_id = a.tenant_id' : '';
  const where = ['a.tenant_id = $1', 'a.sandbox = false', ...byLead].join(' AND ');
  return { values, param, join, where };
}

/** How many cases each stage holds under the filter, by stage key (a stage with none is absent). */
export async function applicationStageCounts(
  sql: Queryable,
  tenantId: string,
  filter: BoardFilter,
): Promise<Map<string, number>> {
  const q = scoped(tenantId, filter);
  const result = await sql.query<{ key: string | null; n: number }>(
    `SELECT a.status->'stage'->>'key' AS key, count(*)::int AS n FROM applications a ${q.join}
      WHERE ${q.where} GROUP BY 1`,
    q.values,
  );
  return new Map(result.rows.map((r) => [r.key ?? '', r.n]));
}

/** The first `limit` cases of each stage under the filter, in the list's order (newest case number first). */
export async function applicationCards(
  sql: Queryable,
  tenantId: string,
  filter: BoardFilter,
  stageKeys: readonly string[],
  limit: number,
): Promise<Map<string, ApplicationCardRow[]>> {
  const q = scoped(tenantId, filter);
  const stages = q.param(stageKeys);
  const max = q.param(limit);
  const result = await sql.query<ApplicationCardRow & { key: string }>(
    `SELECT c.key, x.id, x.case_ref, x.status, x.stages, p.body AS lead,
            (SELECT min(t.due_at) FROM tasks t
              WHERE t.tenant_id = $1 AND t.sandbox = false AND t.application_id = x.id
                AND t.body->>'status' = 'open') AS follow_up,
            (SELECT max(e.created_at) FROM events e
              WHERE e.stream_id = 'application-' || x.id::text AND e.tenant_id = $1
                AND e.type = 'application.stage_changed') AS stage_since
       FROM unnest(${stages}::text[]) WITH ORDINALITY AS c(key, ord)
       CROSS JOIN LATERAL (
         SELECT a.id, a.number, a.case_ref, a.lead_id, a.status->>'status' AS status, a.state->'stages' AS stages
           FROM applications a ${q.join}
          WHERE ${q.where} AND a.status->'stage'->>'key' = c.key
          ORDER BY a.number DESC LIMIT ${max}
       ) x
       LEFT JOIN leads p ON p.id = x.lead_id AND p.tenant_id = $1
      ORDER BY c.ord, x.number DESC`,
    q.values,
  );
  const cards = new Map<string, ApplicationCardRow[]>(stageKeys.map((k) => [k, []]));
  for (const { key, ...row } of result.rows) cards.get(key)?.push(row);
  return cards;
}
