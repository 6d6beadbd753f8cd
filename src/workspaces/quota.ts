import type { Queryable } from '../storage/postgres.js';

// Counter rows per workspace, period and metric: each connection adds to its own row, so concurrent creations do not
// queue on one row lock until they commit.
const SHARDS = 64;
export const LEADS_METRIC = 'leads_created';

/** The calendar month (UTC) a quota counts in, e.g. `2026-11`. */
export function quotaPeriod(now: Date): string {
  return now.toISOString().slice(0, 7);
}

/**
 * SQL for how much of a metric a workspace used in a period (0 when nothing): the sum of its counter rows. The
 * arguments are the query's parameter references (`$1`), so queries that read other things too can include it.
 */
export function quotaUsedSql(tenantId: string, period: string, metric: string): string {
  return `(SELECT coalesce(sum(used), 0)::bigint FROM quota_usage WHERE tenant_id = ${tenantId} AND period = ${period} AND metric = ${metric})`;
}

/** Counts one unit; call it inside the transaction that creates what is counted, so a rollback uncounts it. */
export async function consumeQuota(sql: Queryable, tenantId: string, metric: string, now: Date): Promise<void> {
  await sql.query(
    `INSERT INTO quota_usage (tenant_id, period, metric, shard, used) VALUES ($1, $2, $3, pg_backend_pid() % ${SHARDS}, 1)
     ON CONFLICT (tenant_id, period, metric, shard) DO UPDATE SET used = quota_usage.used + 1`,
    [tenantId, quotaPeriod(now), metric],
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
