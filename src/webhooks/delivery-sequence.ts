import type { Queryable } from '../storage/postgres.js';
import { DELIVERY_LOG_RETENTION_MS, endpointThrottledUntil, throttledFor } from './deliveries.js';
import { DELIVERY_STATES, deliveryState, type DeliveryStateKind } from './delivery-state.js';
import { RETRY_DELAYS_MS } from './retry-schedule.js';
import { payloadVersionOf, type PayloadVersion } from './versions/index.js';

/** The retry schedule in seconds, as each delivery's answer carries it. */
export const RETRY_SCHEDULE_SECONDS: number[] = RETRY_DELAYS_MS.map((ms) => ms / 1000);

/** A numbered delivery's state: the console's (delivery-state.ts), a resend's success counting as its own. */
export const SEQUENCED_STATES = DELIVERY_STATES;
export type SequencedState = DeliveryStateKind;

export interface SequencedDelivery {
  id: string;
  event_id: string;
  event: string;
  sequence: number;
  previous_event_id: string | null;
  state: SequencedState;
  attempts: number;
  next_attempt_at: string | null;
  /** Due but held back by the endpoint's rate: when the rate next lets one of its deliveries go (else null). */
  throttled_until: string | null;
  last_response_status: number | null;
  last_error: string | null;
  created_at: string;
  payload_version: PayloadVersion;
  retry_schedule_seconds: number[];
}

interface Row {
  id: string;
  event_id: string;
  event_type: string;
  sequence: number;
  previous_event_id: string | null;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  next_attempt_at: Date | null;
  last_response_status: number | null;
  last_error: string | null;
  created_at: Date;
  resend_succeeded: boolean;
  endpoint_paused: boolean;
  payload_version: string;
}

function stateOf(row: Row): SequencedState {
  if (row.resend_succeeded) return 'succeeded';
  const facts = {
    status: row.status,
    attempts: row.attempts,
    event: row.event_type,
    next_attempt_at: row.next_attempt_at?.toISOString() ?? null,
    superseded_by: null,
  };
  return deliveryState(facts, row.endpoint_paused).kind;
}

/**
 * The deliveries the fan-out numbered for an endpoint of the workspace and mode, from `sequenceGte` on, one per
 * number (the original; a resend's success counts as its own), within the delivery log's 30 days. Undefined when the
 * workspace and mode have no such endpoint.
 */
export async function deliveriesBySequence(
  sql: Queryable,
  where: { tenantId: string; sandbox: boolean; endpointId: string; sequenceGte: number; limit: number; now: Date },
): Promise<{ data: SequencedDelivery[]; hasMore: boolean } | undefined> {
  const endpoint = await sql.query<{ paused: boolean }>(
    `SELECT status = 'paused' AS paused FROM webhook_endpoints WHERE id = $1 AND tenant_id = $2 AND sandbox = $3`,
    [where.endpointId, where.tenantId, where.sandbox],
  );
  const paused = endpoint.rows[0]?.paused;
  if (paused === undefined) return undefined;
  const result = await sql.query<Row>(
    `SELECT d.id, d.event_id, d.event_type, d.sequence, d.previous_event_id, d.status, d.attempts, d.next_attempt_at,
            d.last_response_status, d.last_error, d.created_at, d.payload_version, $5::boolean AS endpoint_paused,
            EXISTS (SELECT 1 FROM webhook_deliveries r
                     WHERE r.event_id = d.event_id AND r.endpoint_id = d.endpoint_id AND r.resend_of IS NOT NULL
                       AND r.status = 'succeeded') AS resend_succeeded
       FROM webhook_deliveries d
      WHERE d.endpoint_id = $1 AND d.resend_of IS NULL AND d.sequence >= $2 AND d.created_at >= $3
      ORDER BY d.sequence
      LIMIT $4`,
    [
      where.endpointId,
      where.sequenceGte,
      new Date(where.now.getTime() - DELIVERY_LOG_RETENTION_MS),
      where.limit + 1,
      paused,
    ],
  );
  const throttled = await endpointThrottledUntil(sql, where.endpointId, where.now);
  const data = result.rows.slice(0, where.limit).map((row) => ({
    id: row.id,
    event_id: row.event_id,
    event: row.event_type,
    sequence: row.sequence,
    previous_event_id: row.previous_event_id,
    state: stateOf(row),
    attempts: row.attempts,
    next_attempt_at: row.next_attempt_at ? row.next_attempt_at.toISOString() : null,
    throttled_until: throttledFor(row, throttled),
    last_response_status: row.last_response_status,
    last_error: row.last_error,
    created_at: row.created_at.toISOString(),
    payload_version: payloadVersionOf(row.payload_version),
    retry_schedule_seconds: RETRY_SCHEDULE_SECONDS,
  }));
  return { data, hasMore: result.rows.length > where.limit };
}
