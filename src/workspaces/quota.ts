import { ApiError } from '../http/errors.js';
import type { SqlRunner } from '../storage/write-batch.js';
import type { Queryable } from '../storage/postgres.js';
import { monthlyLeadQuota } from './plans.js';
import type { Workspace } from './workspace.js';

const SHARDS = 16;
export const LEADS_METRIC = 'leads_created';

/** The calendar month (UTC) a quota counts in, e.g. `2026-11`. */
export function quotaPeriod(now: Date): string {
  return now.toISOString().slice(0, 7);
}

export async function quotaUsed(sql: Queryable, tenantId: string, metric: string, now: Date): Promise<number> {
  const result = await sql.query<{ used: number | null }>(
    'SELECT sum(used)::bigint AS used FROM quota_usage WHERE tenant_id = $1 AND period = $2 AND metric = $3',
    [tenantId, quotaPeriod(now), metric],
  );
  return result.rows[0]?.used ?? 0;
}

/** Counts one unit; call it inside the transaction that creates what is counted, so a rollback uncounts it. */
export async function consumeQuota(sql: SqlRunner, tenantId: string, metric: string, now: Date): Promise<void> {
  await sql.query(
    `INSERT INTO quota_usage (tenant_id, period, metric, shard, used) VALUES ($1, $2, $3, $4, 1)
     ON CONFLICT (tenant_id, period, metric, shard) DO UPDATE SET used = quota_usage.used + 1`,
    [tenantId, quotaPeriod(now), metric, Math.floor(Math.random() * SHARDS)],
  );
}

/** Refuses with 429 quota_exceeded when the workspace has used its monthly live-lead quota. Sandbox leads are not counted. */
export async function assertLeadQuota(sql: Queryable, workspace: Workspace, sandbox: boolean, now: Date): Promise<void> {
  if (sandbox) return;
  const limit = monthlyLeadQuota(workspace);
  if (limit === null) return;
  const used = await quotaUsed(sql, workspace.id, LEADS_METRIC, now);
  if (used >= limit) {
    throw new ApiError(429, 'quota_exceeded', `This workspace has used its monthly quota of ${limit} new leads; it renews on the first day of next month (UTC)`);
  }
}
