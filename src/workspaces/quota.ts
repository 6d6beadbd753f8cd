import type { Queryable } from '../storage/postgres.js';

export const LEADS_METRIC = 'leads_created';

/** The calendar month (UTC) a quota counts in, e.g. `2026-11`. */
export function quotaPeriod(now: Date): string {
  return now.toISOString().slice(0, 7);
}

/**
 * Takes one unit of `limit` (null: unlimited) in one atomic step: the workspace's counter row for the month is
 * incremented only while it is below the limit, under its row lock, so concurrent captures queue on the row and each
 * sees the count the one before it committed. Refused (nothing counted) with QuotaExceededError. Run it inside the
 * transaction that creates what is counted: a rollback uncounts it. `allowed` keeps the limit last counted against.
 */
export async function consumeQuota(
  sql: Queryable,
  tenantId: string,
  metric: string,
  limit: number | null,
  now: Date,
): Promise<void> {
  const counted = await sql.query(
    `INSERT INTO quota_counters (tenant_id, period, metric, used, allowed)
     SELECT $1, $2, $3, 1, $4::bigint WHERE $4::bigint IS NULL OR $4::bigint > 0
     ON CONFLICT (tenant_id, period, metric) DO UPDATE SET used = quota_counters.used + 1, allowed = EXCLUDED.allowed
      WHERE EXCLUDED.allowed IS NULL OR quota_counters.used < EXCLUDED.allowed
     RETURNING used`,
    [tenantId, quotaPeriod(now), metric, limit],
  );
  if (counted.rowCount === 0) throw new QuotaExceededError(limit ?? 0);
}

/**
 * Adds a workspace's live `lead.created` events to its monthly counters (after an import, which restores the log
 * whole). Imported history is never refused: the months' limits are left for the next capture to set.
 */
export async function countImportedLeads(sql: Queryable, tenantId: string): Promise<void> {
  await sql.query(
    `INSERT INTO quota_counters (tenant_id, period, metric, used)
     SELECT tenant_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM'), $2, count(*)
       FROM events WHERE tenant_id = $1 AND NOT sandbox AND type = 'lead.created'
      GROUP BY tenant_id, 2
     ON CONFLICT (tenant_id, period, metric) DO UPDATE SET used = quota_counters.used + EXCLUDED.used, allowed = NULL`,
    [tenantId, LEADS_METRIC],
  );
}

/** The workspace has used its monthly live-lead quota (sandbox leads are not counted). */
export class QuotaExceededError extends Error {
  readonly refusal = 'quota_exceeded';
  constructor(readonly limit: number) {
    super(`The workspace has used its monthly quota of ${limit} new leads`);
    this.name = 'QuotaExceededError';
  }
}

/** The quota refusal a failed capture stands for (only where there is a limit). */
export function quotaRefusal(error: unknown, limit: number | null): QuotaExceededError | undefined {
  return limit !== null && error instanceof QuotaExceededError ? error : undefined;
}
