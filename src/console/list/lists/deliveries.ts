import { can } from '../../../identity/permissions.js';
import { DELIVERY_LOG_RETENTION_MS, type DeliveryLogAttempt } from '../../../webhooks/deliveries.js';
import {
  DELIVERY_FILTERS,
  DELIVERY_STATES,
  deliveryState,
  deliveryStateCondition,
  eventPatterns,
  type DeliveryState,
} from '../../../webhooks/delivery-state.js';
import { parseJsonText } from '../../../shared/json-text.js';
import { html, type Html } from '../../html.js';
import { eventKindName } from '../../labels.js';
import { momentOf, when } from '../../time.js';
import { csvTime, timeColumn } from '../cells.js';
import type { ListContext, ListSpec } from '../spec.js';
import { FilterSteps } from './shared.js';

/** A delivery of the endpoint's log, with its attempts (oldest first) and whether its endpoint is paused now. */
export interface DeliveryRow {
  id: string;
  event_id: string;
  event: string;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  next_attempt_at: Date | null;
  superseded_by: string | null;
  created_at: Date;
  updated_at: Date;
  request_body: string;
  log: DeliveryLogAttempt[];
  endpoint_paused: boolean;
  /** Due but held back by the endpoint's rate until then (its queue row's `throttled_until`), else null. */
  throttled_until: Date | null;
}

export const DELIVERY_LOG_FILTERS = ['state', 'event', 'since'] as const;

/** Whether the delivery's endpoint is paused now (a deleted endpoint's row is gone: not paused). */
const PAUSED = `coalesce(e.status = 'paused', false)`;

/** The states in the filter's order, as a rank to sort by: the same partition as deliveryState. */
const STATE_RANK = `CASE ${DELIVERY_STATES.map((s, i) => `WHEN ${deliveryStateCondition(s, PAUSED)} THEN ${i}`).join(' ')} ELSE ${DELIVERY_STATES.length} END`;

const attemptsWords = (n: number) => `${n} attempt${n === 1 ? '' : 's'}`;

/** A delivery's state in words, as its receiver saw it; a retrying one's next time is added by the page or file. */
function stateSentence(state: DeliveryState): { words: string; retryAt?: string | null } {
  switch (state.kind) {
    case 'succeeded':
      return { words: `Succeeded after ${attemptsWords(state.attempts)}` };
    case 'queued':
      return { words: 'Not tried yet' };
    case 'retrying':
      return { words: `Failing: ${attemptsWords(state.attempts)} so far, next retry`, retryAt: state.nextAttemptAt };
    case 'failed':
      return { words: `Failed for good after ${attemptsWords(state.attempts)}` };
    case 'waiting':
      return {
        words:
          state.attempts > 0
            ? `Waiting for the paused endpoint, after ${attemptsWords(state.attempts)} that failed`
            : 'Waiting for the paused endpoint',
      };
    case 'cancelled':
      return {
        words: state.supersededBy ? 'Cancelled: a resend of it succeeded' : 'Cancelled: its endpoint was deleted',
      };
    default: {
      const unknown: never = state;
      throw new Error(`Unknown delivery state ${JSON.stringify(unknown)}`);
    }
  }
}

/** The state on the page, a retry's time as a `<time>` in the workspace's zone. */
export function stateWords(state: DeliveryState, zone: string): Html | string {
  const s = stateSentence(state);
  return s.retryAt === undefined ? s.words : html`${s.words} ${when(s.retryAt, zone)}`;
}

/** The state in a file: the same words, a retry's time written as the file's other times are. */
export function stateText(state: DeliveryState, zone: string): string {
  const s = stateSentence(state);
  return s.retryAt === undefined ? s.words : `${s.words} ${csvTime(s.retryAt, zone) || '—'}`;
}

export const stateOf = (r: DeliveryRow) =>
  deliveryState(
    {
      status: r.status,
      attempts: r.attempts,
      event: r.event,
      next_attempt_at: r.next_attempt_at ? r.next_attempt_at.toISOString() : null,
      superseded_by: r.superseded_by,
    },
    r.endpoint_paused,
  );

/** The receiver's last answer: its HTTP status, or the error that stopped the attempt. */
export function lastAnswer(d: { log: readonly Pick<DeliveryLogAttempt, 'response_status' | 'error'>[] }): string {
  const last = d.log.at(-1);
  if (!last) return '—';
  if (last.response_status !== null) return `HTTP ${last.response_status}`;
  return last.error ?? '—';
}

/** The body as sent, indented when it is JSON (it always is; the raw text otherwise). */
export function indented(body: string): string {
  try {
    return JSON.stringify(parseJsonText(body), null, 2);
  } catch {
    return body;
  }
}

function attemptsList(d: DeliveryRow, zone: string): Html {
  return html`<ol>
    ${d.log.map(
      (a) =>
        html`<li>
          <p>
            Attempt ${a.attempt} at ${when(a.attempted_at, zone)}, ${a.duration_ms} ms:
            ${a.response_status !== null ? `HTTP ${a.response_status}` : (a.error ?? '')}
          </p>
          <h4>Request headers</h4>
          <pre>${JSON.stringify(a.request_headers, null, 2)}</pre>
          <h4>The receiver’s answer</h4>
          ${a.response_status !== null ? html`<pre>${a.response_body ?? ''}</pre>` : html`<p>No answer: ${a.error ?? ''}</p>`}
        </li>`,
    )}
  </ol>`;
}

export interface LogEndpoint {
  id: string;
  /** A deleted endpoint's log is read only: nothing is resent to it. */
  deleted: boolean;
}

/**
 * The payload and attempts of a delivery, and (for who may resend, to an endpoint not deleted) a link to resend it:
 * a link to a confirmation, not a form, since the row sits in the list's selection form.
 */
function detailsCell(endpoint: LogEndpoint, d: DeliveryRow, ctx: ListContext): Html {
  const resend = `/console/w/${ctx.view.workspace.slug}/webhooks/${endpoint.id}/deliveries/${d.id}/resend`;
  return html`<details>
    <summary>Payload and attempts<span class="visually-hidden"> of delivery ${d.id}</span></summary>
    <p>Event ${d.event_id}; delivery ${d.id}.</p>
    <h3>Payload</h3>
    <pre>${indented(d.request_body)}</pre>
    ${d.log.length ? attemptsList(d, ctx.zone) : html`<p>No attempt yet.</p>`}
    ${!endpoint.deleted && can(ctx.view.role, 'webhooks.resend') ? html`<p><a href="${resend}">Resend this delivery…</a></p>` : ''}
  </details>`;
}

/**
 * One endpoint's delivery log as a list (on the endpoint's page, `within` it): the deliveries of the retention
 * window, newest first by default, filtered by state (the partition of src/webhooks/delivery-state.ts), event kinds
 * (exact or a prefix) and a creation time in the workspace's zone.
 */
export function deliveryLog(endpoint: LogEndpoint): ListSpec<DeliveryRow> {
  return {
    name: 'deliveries',
    within: { path: `webhooks/${endpoint.id}`, record: ['endpoint', endpoint.id] },
    title: 'Deliveries',
    noun: { one: 'delivery', many: 'deliveries' },
    view: 'webhooks.view',
    from: 'webhook_deliveries d LEFT JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.tenant_id = d.tenant_id',
    select: `d.id, d.event_id, d.event_type AS event, d.status, d.attempts, d.next_attempt_at, d.superseded_by,
      d.created_at, d.updated_at, d.body AS request_body, ${PAUSED} AS endpoint_paused,
      (SELECT q.throttled_until FROM webhook_queues q
        WHERE q.endpoint_id = d.endpoint_id AND d.status = 'pending' AND q.throttled_until > now()
          AND d.next_attempt_at < q.throttled_until) AS throttled_until,
      coalesce((SELECT json_agg(json_build_object('attempt', a.attempt, 'attempted_at', a.attempted_at,
                  'request_headers', a.request_headers, 'response_status', a.response_status,
                  'response_headers', a.response_headers, 'response_body', a.response_body,
                  'duration_ms', a.duration_ms, 'error', a.error) ORDER BY a.attempt)
                  FROM webhook_delivery_attempts a WHERE a.delivery_id = d.id), '[]'::json) AS log`,
    scope: ['d.tenant_id = $1'],
    id: { sql: 'd.id', type: 'uuid' },
    defaultSort: { key: 'created', dir: 'desc' },
    filterNames: DELIVERY_LOG_FILTERS,
    filter: (query, ctx) => {
      const f = new FilterSteps();
      // The endpoint's rows of the retention window (webhook_deliveries_endpoint reads them in creation order).
      f.step((w) => w.add((n) => `d.endpoint_id = ${n}::uuid`, endpoint.id));
      f.step((w) => w.add((n) => `d.created_at >= ${n}`, new Date(ctx.now.getTime() - DELIVERY_LOG_RETENTION_MS)));
      const state = DELIVERY_FILTERS.find((s) => s === query.state);
      if (state) f.step((w) => w.when(deliveryStateCondition(state, PAUSED)));
      else if (query.state) f.errors.state = 'Choose one of the options.';
      const patterns = eventPatterns(query.event ?? '');
      if (patterns.length) f.step((w) => w.add((n) => `d.event_type LIKE ANY (${n}::text[])`, patterns));
      if (query.since) {
        const since = momentOf(query.since, ctx.zone);
        if (since instanceof Date) f.step((w) => w.add((n) => `d.created_at >= ${n}`, since));
        else f.errors.since = since;
      }
      return f;
    },
    rowId: (r) => r.id,
    rowName: (r) => `the ${eventKindName(r.event)} delivery of ${csvTime(r.created_at, 'UTC')} UTC`,
    columns: [
      {
        key: 'event',
        label: 'Event',
        sort: { sql: 'd.event_type', type: 'text' },
        cell: (r) => html`${eventKindName(r.event)} <code>${r.event}</code>`,
        text: (r) => eventKindName(r.event),
      },
      timeColumn<DeliveryRow>('created', 'Created', 'd.created_at', (r) => r.created_at),
      {
        key: 'state',
        label: 'State',
        sort: { sql: STATE_RANK, type: 'integer' },
        cell: (r, ctx) => {
          const state = stateOf(r);
          return html`<span class="badge state-${state.kind}">${stateWords(state, ctx.zone)}</span>${
              r.throttled_until
                ? html` (held back by the endpoint’s rate until ${when(r.throttled_until, ctx.zone)})`
                : ''
            }`;
        },
        text: (r, ctx) =>
          stateText(stateOf(r), ctx.zone) +
          (r.throttled_until
            ? ` (held back by the endpoint’s rate until ${csvTime(r.throttled_until, ctx.zone) || '—'})`
            : ''),
      },
      {
        key: 'attempts',
        label: 'Attempts',
        sort: { sql: 'd.attempts', type: 'integer' },
        cell: (r) => String(r.attempts),
        text: (r) => r.attempts,
      },
      {
        key: 'answer',
        label: 'Last answer',
        // The row keeps its last attempt's outcome (recordAttempts), so the sort reads no attempt.
        sort: { sql: `coalesce('HTTP ' || d.last_response_status, d.last_error, '')`, type: 'text' },
        cell: (r) => lastAnswer(r),
        text: (r) => (r.log.length ? lastAnswer(r) : ''),
      },
      timeColumn<DeliveryRow>('changed', 'Last change', 'd.updated_at', (r) => r.updated_at),
      {
        key: 'details',
        label: 'Details',
        cell: (r, ctx) => detailsCell(endpoint, r, ctx),
        text: (r) => `Event ${r.event_id}; delivery ${r.id}`,
      },
    ],
  };
}
