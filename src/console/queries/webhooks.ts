import { DELIVERY_LOG_RETENTION_MS } from '../../webhooks/deliveries.js';
import { deliveryStateCondition } from '../../webhooks/delivery-state.js';
import type { Queryable } from '../../storage/postgres.js';

const DAY_MS = 24 * 3600_000;

/** Attempts of the last day per endpoint of the workspace: how many, and how many the receiver answered with 2xx. */
export interface AttemptOutcomes {
  attempts: number;
  succeeded: number;
}

/**
 * The attempts made in the 24 hours before `now` to each endpoint of the workspace, counted from the attempt log: a
 * delivery failing and retrying counts each of its failures, so an endpoint that fails every attempt reads 0 %.
 */
export async function recentAttemptOutcomes(
  sql: Queryable,
  tenantId: string,
  now: Date,
): Promise<Map<string, AttemptOutcomes>> {
  const since = new Date(now.getTime() - DAY_MS);
  const result = await sql.query<{ endpoint_id: string; attempts: number; succeeded: number }>(
    `SELECT d.endpoint_id, count(*)::int AS attempts,
            count(*) FILTER (WHERE a.error IS NULL AND a.response_status BETWEEN 200 AND 299)::int AS succeeded
       FROM webhook_deliveries d JOIN webhook_delivery_attempts a ON a.delivery_id = d.id
      WHERE d.endpoint_id IN (SELECT id FROM webhook_endpoints WHERE tenant_id = $1)
        AND d.created_at >= $3 AND d.updated_at >= $2 AND a.attempted_at >= $2
      GROUP BY d.endpoint_id`,
    [tenantId, since, new Date(now.getTime() - DELIVERY_LOG_RETENTION_MS)],
  );
  return new Map(result.rows.map((r) => [r.endpoint_id, { attempts: r.attempts, succeeded: r.succeeded }]));
}

/**
 * The deliveries "retry failed" sends again: every failing one (failed for good, or whose last attempt failed)
 * created since the time, not ended by a resend and not resent already, oldest first. The same partition as the
 * log's "failing" filter (src/webhooks/delivery-state.ts).
 */
export async function failingSince(sql: Queryable, endpointId: string, since: Date): Promise<string[]> {
  const result = await sql.query<{ id: string }>(
    `SELECT d.id FROM webhook_deliveries d
      WHERE d.endpoint_id = $1 AND d.created_at >= $2 AND ${deliveryStateCondition('failing', 'NULL')}
        AND d.superseded_by IS NULL
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries r
                         WHERE r.event_id = d.event_id AND r.endpoint_id = d.endpoint_id AND r.resend_of = d.id)
      ORDER BY d.created_at, d.id`,
    [endpointId, since],
  );
  return result.rows.map((r) => r.id);
}

/** An endpoint deleted in the last 30 days, whose delivery log is still kept. */
export interface DeletedEndpoint {
  id: string;
  sandbox: boolean;
  url: string;
  description: string | null;
  events: string[];
  created_at: Date;
  deleted_at: Date;
}

const DELETED = `SELECT id, sandbox, url, description, events, created_at, deleted_at FROM webhook_endpoints_deleted`;

export async function listDeletedEndpoints(sql: Queryable, tenantId: string, now: Date): Promise<DeletedEndpoint[]> {
  const since = new Date(now.getTime() - DELIVERY_LOG_RETENTION_MS);
  const result = await sql.query<DeletedEndpoint>(
    `${DELETED} WHERE tenant_id = $1 AND deleted_at >= $2 ORDER BY deleted_at DESC, id`,
    [tenantId, since],
  );
  return result.rows;
}

export async function findDeletedEndpoint(
  sql: Queryable,
  tenantId: string,
  id: string,
  now: Date,
): Promise<DeletedEndpoint | undefined> {
  const since = new Date(now.getTime() - DELIVERY_LOG_RETENTION_MS);
  const result = await sql.query<DeletedEndpoint>(`${DELETED} WHERE tenant_id = $1 AND id = $2 AND deleted_at >= $3`, [
    tenantId,
    id,
    since,
  ]);
  return result.rows[0];
}

/** Deliveries a paused endpoint holds: every pending one but webhook.test (still sent while paused). */
export async function waitingDeliveries(sql: Queryable, endpointId: string): Promise<number> {
  const result = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM webhook_deliveries
      WHERE endpoint_id = $1 AND status = 'pending' AND event_type <> 'webhook.test'`,
    [endpointId],
  );
  return result.rows[0]?.n ?? 0;
}

/** One delivery of the endpoint (its event kind and creation), or undefined: the endpoint is the workspace's already. */
export async function findDelivery(
  sql: Queryable,
  endpointId: string,
  id: string,
): Promise<{ id: string; event_type: string; created_at: Date } | undefined> {
  const result = await sql.query<{ id: string; event_type: string; created_at: Date }>(
    'SELECT id, event_type, created_at FROM webhook_deliveries WHERE endpoint_id = $1 AND id = $2',
    [endpointId, id],
  );
  return result.rows[0];
}
