import type { Queryable } from '../../storage/postgres.js';

/** The member's day in the workspace's zone: its first instant, the next day's first, and now. */
export interface DayWindow {
  start: Date;
  end: Date;
  now: Date;
}

export interface FollowUpLine {
  id: string;
  full_name: string;
  stage: string;
  follow_up_at: Date;
}

/** Lines per list: Today is a worklist, the full lists are a link away. */
const LIMIT = 50;

/**
 * The member's own live leads with a follow-up before the end of their day (overdue first, then today's), leaving
 * out lost and converted ones. Read through leads_by_owner (lead_order's, migration 220: `lead_rows` joins it).
 */
export async function myFollowUps(
  sql: Queryable,
  tenantId: string,
  memberId: string,
  day: DayWindow,
): Promise<FollowUpLine[]> {
  const result = await sql.query<FollowUpLine>(
    `SELECT id, coalesce(body->>'full_name', '') AS full_name, body->'stage'->>'name' AS stage,
            (body->>'next_follow_up_at')::timestamptz AS follow_up_at
       FROM lead_rows
      WHERE tenant_id = $1 AND sandbox = false AND owner_id = $2::uuid AND converted = false
        AND body->>'lost_reason' IS NULL AND body->>'next_follow_up_at' IS NOT NULL
        AND (body->>'next_follow_up_at')::timestamptz < $3
      ORDER BY follow_up_at, id LIMIT ${LIMIT}`,
    [tenantId, memberId, day.end],
  );
  return result.rows;
}

export interface TaskLine {
  id: string;
  title: string;
  due_at: Date;
  lead_id: string | null;
  application_id: string | null;
  /** The person or case the task is for. */
  subject: string;
}

/** The member's open tasks, soonest due first, each with the person's name or the case's reference. */
export async function myOpenTasks(sql: Queryable, tenantId: string, memberId: string): Promise<TaskLine[]> {
  const result = await sql.query<TaskLine>(
    `SELECT t.id, t.body->>'title' AS title, t.due_at, t.lead_id, t.application_id,
            coalesce(l.body->>'full_name', a.case_ref, '') AS subject
       FROM tasks t
       LEFT JOIN leads l ON l.id = t.lead_id AND l.tenant_id = t.tenant_id
       LEFT JOIN applications a ON a.id = t.application_id AND a.tenant_id = t.tenant_id
      WHERE t.tenant_id = $1 AND t.sandbox = false AND t.body->>'status' = 'open'
        AND t.body->'assignee'->>'user_id' = $2
      ORDER BY t.due_at, t.id LIMIT ${LIMIT}`,
    [tenantId, memberId],
  );
  return result.rows;
}

export interface NewLeadLine {
  id: string;
  full_name: string;
  source: string;
  created_at: Date;
}

/** Live leads in the pipeline's first stage that nobody owns yet, newest first (leads_unowned_by_creation). */
export async function unownedNewLeads(sql: Queryable, tenantId: string, firstStage: string): Promise<NewLeadLine[]> {
  const result = await sql.query<NewLeadLine>(
    `SELECT id, coalesce(body->>'full_name', '') AS full_name, coalesce(body->'source'->>'name', '') AS source,
            created_at
       FROM lead_rows
      WHERE tenant_id = $1 AND sandbox = false AND owner_id IS NULL AND converted = false
        AND stage_key = $2
      ORDER BY created_at DESC, id LIMIT ${LIMIT}`,
    [tenantId, firstStage],
  );
  return result.rows;
}

export interface WaitingApplicationLine {
  id: string;
  case_ref: string;
  full_name: string;
  stage: string;
  module: string;
  since: Date;
}

/**
 * Active cases of the member's own leads with a module still to update: the work waits on them. Longest waiting
 * first (by the case's last change).
 */
export async function applicationsWaitingOn(
  sql: Queryable,
  tenantId: string,
  memberId: string,
): Promise<WaitingApplicationLine[]> {
  const result = await sql.query<WaitingApplicationLine>(
    `SELECT a.id, a.case_ref, coalesce(l.body->>'full_name', '') AS full_name, a.status->'stage'->>'name' AS stage,
            a.status->'current_module'->>'name' AS module, a.updated_at AS since
       FROM lead_rows l
       JOIN applications a ON a.tenant_id = l.tenant_id AND a.sandbox = false AND a.lead_id = l.id
      WHERE l.tenant_id = $1 AND l.sandbox = false AND l.owner_id = $2::uuid
        AND a.status->>'status' = 'active' AND a.status->>'current_module' IS NOT NULL
      ORDER BY a.updated_at, a.id LIMIT ${LIMIT}`,
    [tenantId, memberId],
  );
  return result.rows;
}

export interface EndpointTroubleLine {
  id: string;
  url: string;
  sandbox: boolean;
  status: 'active' | 'paused';
  paused_at: Date | null;
  /** Deliveries whose attempts failed so far and that are still being retried. */
  retrying: number;
  /** Deliveries held while the endpoint is paused (every pending one but webhook.test, which is still sent). */
  waiting: number;
  /** Deliveries that failed for good in the last 7 days. */
  failed: number;
}

/**
 * The workspace's endpoints that need someone: paused ones, and those with deliveries failing now (retrying) or
 * failed for good in the last 7 days. The counts read the endpoint's pending and by-creation delivery indexes.
 */
export async function troubledEndpoints(sql: Queryable, tenantId: string, now: Date): Promise<EndpointTroubleLine[]> {
  const result = await sql.query<EndpointTroubleLine>(
    `SELECT e.id, e.url, e.sandbox, e.status, e.paused_at, r.retrying, f.failed, coalesce(w.waiting, 0) AS waiting
       FROM webhook_endpoints e
       LEFT JOIN LATERAL (SELECT count(*)::int AS waiting FROM webhook_deliveries d
                           WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.event_type <> 'webhook.test'
                             AND e.status = 'paused') w ON true
       CROSS JOIN LATERAL (SELECT count(*)::int AS retrying FROM webhook_deliveries d
                            WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.attempts > 0) r
       CROSS JOIN LATERAL (SELECT count(*)::int AS failed FROM webhook_deliveries d
                            WHERE d.endpoint_id = e.id AND d.created_at > $2::timestamptz - interval '7 days'
                              AND d.status = 'failed') f
      WHERE e.tenant_id = $1 AND (e.status = 'paused' OR r.retrying > 0 OR f.failed > 0)
      ORDER BY e.status DESC, e.sandbox, e.created_at, e.id LIMIT ${LIMIT}`,
    [tenantId, now],
  );
  return result.rows;
}
