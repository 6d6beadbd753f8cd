import { randomUUID } from 'node:crypto';
import type { Queryable } from '../storage/postgres.js';

export const DELIVERIES_CHANNEL = 'webhook_deliveries';
export const DELIVERY_LOG_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** A delivery a worker holds a lease on, with what it needs to send it. */
export interface ClaimedDelivery {
  id: string;
  event_id: string;
  endpoint_id: string;
  tenant_id: string;
  sandbox: boolean;
  event_type: string;
  body: string;
  attempts: number;
  url: string;
  endpoint_status: 'active' | 'paused';
  sealed_secret: string;
  previous_sealed_secret: string | null;
  previous_secret_valid_until: Date | null;
}

/**
 * Leases up to `limit` due deliveries to `owner` until `leaseUntil`. SKIP LOCKED keeps two workers off the same rows
 * while they claim, and the lease keeps them off afterwards while one sends; a lease left by a crashed worker ends and
 * the delivery is claimed again. Deliveries to paused endpoints wait (webhook.test excepted).
 */
export async function claimDueDeliveries(
  sql: Queryable,
  owner: string,
  now: Date,
  leaseUntil: Date,
  limit: number,
): Promise<ClaimedDelivery[]> {
  const result = await sql.query<ClaimedDelivery>(
    `UPDATE webhook_deliveries d SET lease_owner = $1, lease_until = $2
       FROM (SELECT d2.id, ep.url, ep.status AS endpoint_status, ep.sealed_secret, ep.previous_sealed_secret, ep.previous_secret_valid_until
               FROM webhook_deliveries d2 JOIN webhook_endpoints ep ON ep.id = d2.endpoint_id
              WHERE d2.status = 'pending' AND d2.next_attempt_at <= $3 AND (d2.lease_until IS NULL OR d2.lease_until <= $3)
                AND (ep.status = 'active' OR d2.event_type = 'webhook.test')
              ORDER BY d2.next_attempt_at
              LIMIT $4
                FOR UPDATE OF d2 SKIP LOCKED) c
      WHERE d.id = c.id
      RETURNING d.id, d.event_id, d.endpoint_id, d.tenant_id, d.sandbox, d.event_type, d.body, d.attempts,
                c.url, c.endpoint_status, c.sealed_secret, c.previous_sealed_secret, c.previous_secret_valid_until`,
    [owner, leaseUntil, now, limit],
  );
  return result.rows;
}

export interface AttemptRecord {
  deliveryId: string;
  /** The attempt's number, counting from 1. */
  attempt: number;
  ok: boolean;
  /** Set when the delivery is still pending after this attempt. */
  nextAttemptAt: Date | null;
  attemptedAt: Date;
  finishedAt: Date;
  requestHeaders: Record<string, string>;
  responseStatus: number | null;
  responseHeaders: Record<string, string | string[]> | null;
  responseBody: string | null;
  durationMs: number;
  error: string | null;
}

/**
 * Records finished attempts in one statement: each delivery's new state, its log entry, and each endpoint's run of
 * failures (failures after the batch's last success for that endpoint, in the order given). Attempts whose lease was
 * lost to another worker write nothing. Returns, per recorded delivery, its endpoint's consecutive failures when the
 * batch changed them.
 */
export async function recordAttempts(
  sql: Queryable,
  owner: string,
  records: readonly AttemptRecord[],
): Promise<Map<string, number | null>> {
  const column = <T>(pick: (r: AttemptRecord) => T) => records.map(pick);
  const result = await sql.query<{ id: string; consecutive_failures: number | null }>(
    `WITH input AS (
       SELECT * FROM unnest($2::uuid[], $3::int[], $4::text[], $5::timestamptz[], $6::int[], $7::text[], $8::timestamptz[], $9::timestamptz[],
                            $10::jsonb[], $11::jsonb[], $12::text[], $13::int[], $14::boolean[])
         WITH ORDINALITY AS i(id, attempt, status, next_attempt_at, response_status, error, finished_at, attempted_at,
                              request_headers, response_headers, response_body, duration_ms, ok, seq)
     ), d AS (
       UPDATE webhook_deliveries w SET attempts = i.attempt, status = i.status, next_attempt_at = i.next_attempt_at, lease_owner = NULL, lease_until = NULL,
              last_response_status = i.response_status, last_error = i.error, updated_at = i.finished_at
         FROM input i
        WHERE w.id = i.id AND w.lease_owner = $1 AND w.status = 'pending'
        RETURNING w.id, w.endpoint_id
     ), logged AS (
       INSERT INTO webhook_delivery_attempts (delivery_id, attempt, attempted_at, request_headers, response_status, response_headers, response_body, duration_ms, error)
       SELECT i.id, i.attempt, i.attempted_at, i.request_headers, i.response_status, i.response_headers, i.response_body, i.duration_ms, i.error
         FROM input i JOIN d ON d.id = i.id
       ON CONFLICT (delivery_id, attempt) DO NOTHING
     ), per AS (
       SELECT d.endpoint_id, i.seq, i.ok FROM input i JOIN d ON d.id = i.id
     ), runs AS (
       SELECT p.endpoint_id, bool_or(p.ok) AS reset,
              count(*) FILTER (WHERE NOT p.ok AND p.seq > coalesce(l.last_ok, 0))::int AS added
         FROM per p JOIN (SELECT endpoint_id, max(seq) FILTER (WHERE ok) AS last_ok FROM per GROUP BY endpoint_id) l USING (endpoint_id)
        GROUP BY p.endpoint_id
     ), health AS (
       -- UPDATE locks only the rows its WHERE keeps: successes to an endpoint with no failures write (and queue) nothing.
       UPDATE webhook_endpoint_health h SET consecutive_failures = CASE WHEN r.reset THEN r.added ELSE h.consecutive_failures + r.added END
         FROM runs r
        WHERE h.endpoint_id = r.endpoint_id AND (r.added > 0 OR h.consecutive_failures <> 0)
        RETURNING h.endpoint_id, h.consecutive_failures
     )
     SELECT d.id, health.consecutive_failures FROM d LEFT JOIN health ON health.endpoint_id = d.endpoint_id`,
    [
      owner,
      column((r) => r.deliveryId),
      column((r) => r.attempt),
      column((r) => (r.ok ? 'succeeded' : r.nextAttemptAt ? 'pending' : 'failed')),
      column((r) => r.nextAttemptAt),
      column((r) => r.responseStatus),
      column((r) => r.error),
      column((r) => r.finishedAt),
      column((r) => r.attemptedAt),
      column((r) => JSON.stringify(r.requestHeaders)),
      column((r) => (r.responseHeaders === null ? null : JSON.stringify(r.responseHeaders))),
      column((r) => r.responseBody),
      column((r) => r.durationMs),
      column((r) => r.ok),
    ],
  );
  return new Map(result.rows.map((row) => [row.id, row.consecutive_failures]));
}

export interface DeliveryLogEntry {
  id: string;
  event_id: string;
  event: string;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  next_attempt_at: string | null;
  resend_of: string | null;
  created_at: string;
  updated_at: string;
  request_body: string;
  log: {
    attempt: number;
    attempted_at: string;
    request_headers: Record<string, string>;
    response_status: number | null;
    response_headers: Record<string, string | string[]> | null;
    response_body: string | null;
    duration_ms: number;
    error: string | null;
  }[];
}

interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  status: DeliveryLogEntry['status'];
  attempts: number;
  next_attempt_at: Date | null;
  resend_of: string | null;
  created_at: Date;
  updated_at: Date;
  body: string;
  log: {
    attempt: number;
    attempted_at: string;
    request_headers: Record<string, string>;
    response_status: number | null;
    response_headers: Record<string, string | string[]> | null;
    response_body: string | null;
    duration_ms: number;
    error: string | null;
  }[];
}

/** The delivery log of one endpoint, newest first, within the retention window. `before` is the cursor (a delivery id). */
export async function listDeliveries(
  sql: Queryable,
  endpointId: string,
  options: { limit: number; before?: string; now: Date },
): Promise<{ data: DeliveryLogEntry[]; next_cursor: string | null }> {
  const since = new Date(options.now.getTime() - DELIVERY_LOG_RETENTION_MS);
  const result = await sql.query<DeliveryRow>(
    `SELECT d.id, d.event_id, d.event_type, d.status, d.attempts, d.next_attempt_at, d.resend_of, d.created_at, d.updated_at, d.body,
            coalesce((SELECT json_agg(json_build_object('attempt', a.attempt, 'attempted_at', a.attempted_at, 'request_headers', a.request_headers,
                        'response_status', a.response_status, 'response_headers', a.response_headers, 'response_body', a.response_body,
                        'duration_ms', a.duration_ms, 'error', a.error) ORDER BY a.attempt)
                        FROM webhook_delivery_attempts a WHERE a.delivery_id = d.id), '[]'::json) AS log
       FROM webhook_deliveries d
      WHERE d.endpoint_id = $1 AND d.created_at >= $2
        AND ($3::uuid IS NULL OR (d.created_at, d.id) < (SELECT created_at, id FROM webhook_deliveries WHERE id = $3))
      ORDER BY d.created_at DESC, d.id DESC
      LIMIT $4`,
    [endpointId, since, options.before ?? null, options.limit + 1],
  );
  const rows = result.rows.slice(0, options.limit);
  return {
    data: rows.map((d) => ({
      id: d.id,
      event_id: d.event_id,
      event: d.event_type,
      status: d.status,
      attempts: d.attempts,
      next_attempt_at: d.next_attempt_at ? d.next_attempt_at.toISOString() : null,
      resend_of: d.resend_of,
      created_at: d.created_at.toISOString(),
      updated_at: d.updated_at.toISOString(),
      request_body: d.body,
      log: d.log.map((a) => ({ ...a, attempted_at: new Date(a.attempted_at).toISOString() })),
    })),
    next_cursor: result.rows.length > options.limit ? rows[rows.length - 1]!.id : null,
  };
}

/** A manual resend: a new delivery (new id) of the same event with the same body, due now. */
export async function resendDelivery(
  sql: Queryable,
  endpointId: string,
  deliveryId: string,
  now: Date,
): Promise<{ id: string; event_id: string } | undefined> {
  const result = await sql.query<{ id: string; event_id: string }>(
    `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status, next_attempt_at, resend_of, created_at, updated_at)
     SELECT $1, event_id, endpoint_id, tenant_id, sandbox, event_type, body, 'pending', $4, id, $4, $4
       FROM webhook_deliveries WHERE id = $2 AND endpoint_id = $3
     RETURNING id, event_id`,
    [randomUUID(), deliveryId, endpointId, now],
  );
  if (result.rows[0]) await sql.query(`SELECT pg_notify('${DELIVERIES_CHANNEL}', '')`);
  return result.rows[0];
}

/** Drops log entries older than the retention window and cancels what waits for an endpoint that no longer exists. */
export async function purgeDeliveries(sql: Queryable, now: Date): Promise<{ purged: number; cancelled: number }> {
  const purged = await sql.query('DELETE FROM webhook_deliveries WHERE created_at < $1', [
    new Date(now.getTime() - DELIVERY_LOG_RETENTION_MS),
  ]);
  const cancelled = await sql.query(
    `UPDATE webhook_deliveries d SET status = 'cancelled', lease_owner = NULL, lease_until = NULL, updated_at = $1
      WHERE d.status = 'pending' AND NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = d.endpoint_id)`,
    [now],
  );
  return { purged: purged.rowCount ?? 0, cancelled: cancelled.rowCount ?? 0 };
}

/** Deliveries due and not leased, and deliveries leased (being sent), for metrics. */
export async function deliveryBacklog(sql: Queryable, now: Date): Promise<{ due: number; inFlight: number }> {
  const result = await sql.query<{ due: number; in_flight: number }>(
    `SELECT count(*) FILTER (WHERE next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1))::bigint AS due,
            count(*) FILTER (WHERE lease_until > $1)::bigint AS in_flight
       FROM webhook_deliveries
      WHERE status = 'pending'`,
    [now],
  );
  return { due: result.rows[0]?.due ?? 0, inFlight: result.rows[0]?.in_flight ?? 0 };
}
