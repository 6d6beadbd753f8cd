import { pgConstraint, type Queryable } from '../storage/postgres.js';

export const LEADS_METRIC = 'leads_created';

/** The CHECK of quota_counters (migration 50) that refuses a count past the limit it was taken against. */
const WITHIN_ALLOWED = 'quota_counters_within_allowed';

/** The calendar month (UTC) a quota counts in, e.g. `2026-11`. */
export function quotaPeriod(now: Date): string {
  return now.toISOString().slice(0, 7);
}

/**
 * SQL for how much of a metric a workspace used in a period (0 when nothing), as committed (or counted earlier in
 * the same transaction). The arguments are the query's parameter references (`$1`), so queries that read other
 * things too can include it. A read only: the count itself refuses what this let through (`consumeQuota`).
 */
export function quotaUsedSql(tenantId: string, period: string, metric: string): string {
  return `coalesce((SELECT used FROM quota_counters WHERE tenant_id = ${tenantId} AND period = ${period} AND metric = ${metric}), 0)::bigint`;
}

/**
 * Counts one unit against `limit` (null: unlimited) in one statement: the workspace's counter row for the month is
 * incremented under its row lock, and its CHECK fails the statement, and so the transaction, when the count would
 * pass the limit (see `quotaRefusal`). Send it inside the transaction that creates what is counted, with its trailing
 * writes (after its reads and stream locks): a rollback uncounts it, and the row lock is held only until COMMIT.
 */
export async function consumeQuota(
  sql: Queryable,
  tenantId: string,
  metric: string,
  limit: number | null,
  now: Date,
): Promise<void> {
  await sql.query(
    `INSERT INTO quota_counters (tenant_id, period, metric, used, allowed) VALUES ($1, $2, $3, 1, $4)
     ON CONFLICT (tenant_id, period, metric) DO UPDATE SET used = quota_counters.used + 1, allowed = EXCLUDED.allowed`,
    [tenantId, quotaPeriod(now), metric, limit],
  );
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

/** Refuses with QuotaExceededError when the workspace has used its monthly live-lead quota. */
export function assertWithinQuota(used: number, limit: number): void {
  if (used >= limit) throw new QuotaExceededError(limit);
}

/** The quota refusal a failed transaction stands for, when its count was refused by `consumeQuota`'s CHECK. */
export function quotaRefusal(error: unknown, limit: number | null): QuotaExceededError | undefined {
  return limit !== null && pgConstraint(error) === WITHIN_ALLOWED ? new QuotaExceededError(limit) : undefined;
}
