import type { Queryable } from '../storage/postgres.js';

export const LEADS_METRIC = 'leads_created';

/** The calendar month (UTC) a quota counts in, e.g. `2026-11`. */
export function quotaPeriod(now: Date): string {
  return now.toISOString().slice(0, 7);
}

/**
 * Takes one unit of `limit` in one atomic step: the workspace's counter row for the month is incremented only while
 * it is below the limit, under its row lock, so concurrent captures queue on the row and each sees the count the one
 * before it committed. Refused (nothing counted) with QuotaExceededError. Run it inside the transaction that creates
 * what is counted: a rollback uncounts it. `allowed` keeps the limit last counted against.
 *
 * Without a limit nothing is counted: the row would make every capture of the workspace queue on it for nothing
 * (`recountLeadQuota` counts the month from the log when a limit is set later).
 */
export async function consumeQuota(
  sql: Queryable,
  tenantId: string,
  metric: string,
  limit: number | null,
  now: Date,
): Promise<void> {
  if (limit === null) return;
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

/**
 * Sets the month's counter to the live leads the log holds for it: run where a workspace without a limit gets one
 * (its captures were not counted), in the transaction that sets the limit.
 */
export async function recountLeadQuota(sql: Queryable, tenantId: string, limit: number, now: Date): Promise<void> {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  await sql.query(
    `INSERT INTO quota_counters (tenant_id, period, metric, used, allowed)
     SELECT $1, $2, $3, count(*), $4 FROM events
      WHERE tenant_id = $1 AND NOT sandbox AND type = 'lead.created' AND created_at >= $5 AND created_at < $6
     ON CONFLICT (tenant_id, period, metric) DO UPDATE SET used = EXCLUDED.used, allowed = EXCLUDED.allowed`,
    [tenantId, quotaPeriod(now), LEADS_METRIC, limit, start, end],
  );
}

/** The workspace has used its monthly live-lead quota (sandbox leads are not counted). */
export class QuotaExceededError extends Error {
  readonly refusal = 'quota_exceeded';
  readonly limit: number;
  constructor(limit: number) {
    super(`The workspace has used its monthly quota of ${limit} new leads`);
    this.limit = limit;
    this.name = 'QuotaExceededError';
  }
}

/** The quota refusal a failed capture stands for (only where there is a limit). */
export function quotaRefusal(error: unknown, limit: number | null): QuotaExceededError | undefined {
  return limit !== null && error instanceof QuotaExceededError ? error : undefined;
}
