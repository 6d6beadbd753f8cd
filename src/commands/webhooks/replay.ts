import { randomUUID } from 'node:crypto';
import type { AppServices } from '../../bootstrap.js';
import { endpointStream } from '../../domain/webhooks/endpoint.js';
import { Refusal } from '../../domain/refusal.js';
import type { CommandContext } from '../../events/types.js';
import { findEndpoint, type EndpointRow } from '../../projections/webhook-endpoints.js';
import type { Queryable } from '../../storage/postgres.js';
import type { BucketSpec } from '../../workspaces/workspace.js';
import { DELIVERIES_CHANNEL, DELIVERY_LOG_RETENTION_MS, RESUMED_DRAIN_PER_SECOND } from '../../webhooks/deliveries.js';
import { IdempotencyKeyReusedError, NotFoundError, ReplayRateLimitedError } from '../errors.js';
import {
  findAnswer,
  idempotencyLock,
  requestHash,
  saveAnswer,
  type IdempotencyScope,
} from '../../intake/idempotency.js';
import { runCommand } from '../run-command.js';

/** The operation's name among the answers kept per Idempotency-Key (its operationId). */
export const REPLAY_OPERATION = 'replayWebhookEvents';
/** How far back a replay may reach: the delivery log's retention, beyond which there is nothing to send again. */
export const REPLAY_MAX_AGE_MS = DELIVERY_LOG_RETENTION_MS;
/** The most deliveries one replay queues; a larger window is refused whole (narrow it, or name kinds). */
export const REPLAY_MAX_DELIVERIES = 10_000;
/** Replays per endpoint: 10 at once, 10 an hour after that (a replay may queue thousands of deliveries). */
export const REPLAY_RATE: BucketSpec = { capacity: 10, refill_per_second: 10 / 3600 };

/** What a replay asks for (the body of POST /v1/webhooks/{id}/replay). */
export interface ReplayRequest {
  since: string;
  until?: string;
  kinds?: string[];
  only_failed?: boolean;
}

/** What a replay did: its id, the window it read, and how many deliveries it queued. */
export interface ReplaySummary {
  id: string;
  endpoint_id: string;
  since: string;
  until: string;
  kinds: string[];
  only_failed: boolean;
  queued: number;
  created_at: string;
}

export interface ReplayAnswer extends ReplaySummary {
  /** True when this is the first answer given again for the same Idempotency-Key: nothing new was queued. */
  replayed: boolean;
}

interface Window {
  since: Date;
  until: Date;
  kinds: string[];
  onlyFailed: boolean;
}

const invalid = (fields: Record<string, string>) =>
  new Refusal('invalid', 'validation_failed', 'Some fields are invalid; see fields', fields);

/**
 * The window a request names, checked against the clock and the endpoint: `since` no older than 30 days and before
 * now, `until` after it (a later one than now reads as now), each kind one the endpoint subscribes to.
 */
export function replayWindow(request: ReplayRequest, endpoint: Pick<EndpointRow, 'events'>, now: Date): Window {
  const since = new Date(request.since);
  // The HTTP schema checks the form already; the CLI's options arrive as typed.
  if (Number.isNaN(since.getTime())) throw invalid({ since: 'must be a time in RFC 3339 form' });
  const oldest = new Date(now.getTime() - REPLAY_MAX_AGE_MS);
  if (since < oldest) throw invalid({ since: `must be within the last 30 days (not before ${oldest.toISOString()})` });
  if (since >= now) throw invalid({ since: 'must be before now' });
  let until = now;
  if (request.until !== undefined) {
    const given = new Date(request.until);
    if (Number.isNaN(given.getTime())) throw invalid({ until: 'must be a time in RFC 3339 form' });
    if (given <= since) throw invalid({ until: 'must be after since' });
    if (given < now) until = given;
  }
  const subscribed = new Set<string>(endpoint.events);
  const unsubscribed = (request.kinds ?? []).filter((k) => !subscribed.has(k));
  if (unsubscribed.length > 0)
    throw invalid({ kinds: `not among the kinds this endpoint subscribes to: ${unsubscribed.join(', ')}` });
  const kinds = request.kinds ? [...new Set(request.kinds)] : [...endpoint.events];
  return { since, until, kinds, onlyFailed: request.only_failed ?? false };
}

/**
 * The original deliveries a replay sends again, in event order (the log's order, in which the fan-out numbered them):
 * the endpoint's deliveries of the events of its workspace and mode created in [since, until) whose kinds are asked
 * for; with `onlyFailed`, only events no delivery to this endpoint succeeded for or is queued afresh for, and at least
 * one failed (for good, or its last attempt did). At most `limit` ids.
 */
export async function replayedOriginals(
  sql: Queryable,
  endpoint: Pick<EndpointRow, 'id' | 'tenant_id' | 'sandbox'>,
  window: Window,
  limit: number,
): Promise<string[]> {
  const result = await sql.query<{ id: string }>(
    `SELECT d.id FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
      WHERE d.endpoint_id = $1 AND d.resend_of IS NULL
        -- A delivery is made after its event: this bound lets the endpoint's own index narrow the read.
        AND d.created_at >= $4
        AND e.tenant_id = $2 AND e.sandbox = $3 AND e.created_at >= $4 AND e.created_at < $5
        AND d.event_type = ANY ($6::text[])
        -- The event's resends are read by the index of resends (0047), never by the endpoint's whole log.
        AND (NOT $7::boolean OR (
              NOT (d.status = 'succeeded' OR (d.status = 'pending' AND d.attempts = 0))
          AND ((d.status = 'failed' OR (d.status = 'pending' AND d.attempts > 0))
               OR EXISTS (SELECT 1 FROM webhook_deliveries f
                           WHERE f.event_id = d.event_id AND f.endpoint_id = d.endpoint_id AND f.resend_of IS NOT NULL
                             AND (f.status = 'failed' OR (f.status = 'pending' AND f.attempts > 0))))
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries s
                           WHERE s.event_id = d.event_id AND s.endpoint_id = d.endpoint_id AND s.resend_of IS NOT NULL
                             AND (s.status = 'succeeded' OR (s.status = 'pending' AND s.attempts = 0)))))
      ORDER BY e.tx_id, e.position
      LIMIT $8`,
    [
      endpoint.id,
      endpoint.tenant_id,
      endpoint.sandbox,
      window.since,
      window.until,
      window.kinds,
      window.onlyFailed,
      limit,
    ],
  );
  return result.rows.map((r) => r.id);
}

/**
 * Queues a resend of each original, in the order given: same event id, body and payload version, the same sequence
 * number (the event's number for this endpoint), a new delivery id. The n-th comes due n / 50 seconds from now, so a
 * large replay reaches the receiver oldest first at a bounded rate, as a resumed endpoint's backlog does; its creation
 * time is n microseconds after now, so the delivery log, ordered by creation, lists them in event order too.
 */
async function queueResends(sql: Queryable, originals: readonly string[], now: Date): Promise<number> {
  if (originals.length === 0) return 0;
  const inserted = await sql.query(
    `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status,
                                     next_attempt_at, resend_of, created_at, updated_at, sequence, previous_event_id,
                                     payload_version)
     SELECT gen_random_uuid(), o.event_id, o.endpoint_id, o.tenant_id, o.sandbox, o.event_type, o.body, 'pending',
            $2::timestamptz + make_interval(secs => (c.turn - 1) / $3::double precision), o.id,
            $2::timestamptz + make_interval(secs => (c.turn - 1) / 1e6), $2, o.sequence,
            o.previous_event_id, o.payload_version
       FROM unnest($1::uuid[]) WITH ORDINALITY AS c(id, turn) JOIN webhook_deliveries o ON o.id = c.id
      ORDER BY c.turn`,
    [originals, now, RESUMED_DRAIN_PER_SECOND],
  );
  await sql.query(`SELECT pg_notify($1, '')`, [DELIVERIES_CHANNEL]);
  return inserted.rowCount ?? 0;
}

const tooMany = () =>
  new Refusal(
    'invalid',
    'replay_too_large',
    `This window holds more than ${REPLAY_MAX_DELIVERIES.toLocaleString('en')} deliveries to replay, more than one ` +
      'replay queues: narrow it (a later since or an earlier until) or name fewer kinds',
  );

async function endpointOf(sql: Queryable, context: CommandContext, id: string): Promise<EndpointRow> {
  const row = await findEndpoint(sql, context.tenantId, id, context.sandbox);
  if (!row) throw new NotFoundError('webhook endpoint');
  return row;
}

/** How many deliveries the request would queue now (the console's preview), refusing what the replay would. */
export async function previewReplay(
  services: AppServices,
  context: CommandContext,
  endpointId: string,
  request: ReplayRequest,
): Promise<{ count: number; window: Window }> {
  const endpoint = await endpointOf(services.pool, context, endpointId);
  const window = replayWindow(request, endpoint, context.now);
  const ids = await replayedOriginals(services.pool, endpoint, window, REPLAY_MAX_DELIVERIES + 1);
  if (ids.length > REPLAY_MAX_DELIVERIES) throw tooMany();
  return { count: ids.length, window };
}

/**
 * POST /v1/webhooks/{id}/replay, the console's "retry failed since", the admin interface's and the CLI's replay: the
 * events of a window sent again to the endpoint of the caller's workspace and mode (another's is not found). With an
 * Idempotency-Key, a repeat within 24 hours with the same body answers the first summary and queues nothing; the
 * same key with another body is refused. Rate-limited per endpoint; at most REPLAY_MAX_DELIVERIES deliveries.
 */
export async function replayEndpointEvents(
  services: AppServices,
  context: CommandContext,
  endpointId: string,
  request: ReplayRequest,
  idempotencyKey: string | null,
): Promise<ReplayAnswer> {
  const scope: IdempotencyScope = { tenantId: context.tenantId, sandbox: context.sandbox, operation: REPLAY_OPERATION };
  const hash = requestHash({
    endpoint_id: endpointId,
    since: request.since,
    until: request.until ?? null,
    kinds: request.kinds ?? null,
    only_failed: request.only_failed ?? false,
  });
  const earlier = async (sql: Queryable): Promise<ReplayAnswer | undefined> => {
    if (idempotencyKey === null) return undefined;
    const first = await findAnswer(sql, scope, idempotencyKey, context.now);
    if (!first) return undefined;
    if (first.requestHash !== hash) throw new IdempotencyKeyReusedError();
    return { ...(first.body as unknown as ReplaySummary), replayed: true };
  };
  // A repeat is answered before the window is checked again (its since may have aged past 30 days since) and before
  // the rate limit, which only requests that queue something count against.
  const answered = await earlier(services.pool);
  if (answered) return answered;
  const endpoint = await endpointOf(services.pool, context, endpointId);
  const window = replayWindow(request, endpoint, context.now);
  const taken = await services.rateLimits.take([
    { id: `webhook-replay:${endpointId}`, scope: 'webhook_replay', spec: REPLAY_RATE },
  ]);
  if (!taken.allowed) throw new ReplayRateLimitedError(taken.retryAfterSeconds, REPLAY_RATE.capacity);
  // The endpoint's stream is held, so a deletion either comes first (not found) or waits for the replay, then cancels
  // what it queued; the key's lock makes a concurrent repeat wait and read this answer.
  const locks = [
    ...(idempotencyKey === null ? [] : [idempotencyLock(scope, idempotencyKey)]),
    endpointStream(endpointId),
  ];
  return runCommand(services.store, context, locks, async (tx): Promise<ReplayAnswer> => {
    const again = await earlier(tx.sql);
    if (again) return again;
    const current = await endpointOf(tx.sql, context, endpointId);
    const originals = await replayedOriginals(tx.sql, current, window, REPLAY_MAX_DELIVERIES + 1);
    if (originals.length > REPLAY_MAX_DELIVERIES) throw tooMany();
    const queued = await queueResends(tx.sql, originals, context.now);
    const summary: ReplaySummary = {
      id: randomUUID(),
      endpoint_id: endpointId,
      since: window.since.toISOString(),
      until: window.until.toISOString(),
      kinds: window.kinds,
      only_failed: window.onlyFailed,
      queued,
      created_at: context.now.toISOString(),
    };
    await tx.sql.query(
      `INSERT INTO webhook_replays (id, tenant_id, sandbox, endpoint_id, since, until, kinds, only_failed, queued, actor,
                                    created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [
        summary.id,
        context.tenantId,
        context.sandbox,
        endpointId,
        window.since,
        window.until,
        request.kinds ? window.kinds : null,
        window.onlyFailed,
        queued,
        JSON.stringify(context.metadata.actor),
        context.now,
      ],
    );
    if (idempotencyKey !== null)
      await saveAnswer(
        tx.sql,
        scope,
        idempotencyKey,
        { requestHash: hash, status: 202, body: { ...summary } },
        context.now,
      );
    return { ...summary, replayed: false };
  });
}
