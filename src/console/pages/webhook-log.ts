import type { DeliveryLogEntry } from '../../webhooks/deliveries.js';
import {
  DELIVERY_FILTERS,
  deliveryState,
  type DeliveryFilter,
  type DeliveryState,
} from '../../webhooks/delivery-state.js';
import { EVENT_KINDS } from '../../shared/enums.js';
import { eventKindName } from '../labels.js';
import { html, table, type Html } from '../html.js';
import { choice, csrfField, field, notice } from '../layout.js';
import { when } from '../time.js';
import { parseJsonText } from '../../shared/json-text.js';

/** The log's filters as the query string holds them. */
export interface LogQuery {
  state?: string;
  event?: string;
  since?: string;
  cursor?: string;
}

export const FILTER_WORDS: Record<DeliveryFilter, string> = {
  failing: 'Failing or failed',
  succeeded: 'Succeeded',
  retrying: 'Failing, will retry',
  failed: 'Failed for good',
  waiting: 'Waiting for the endpoint to resume',
  queued: 'Not tried yet',
  cancelled: 'Cancelled',
};

const attempts = (n: number) => `${n} attempt${n === 1 ? '' : 's'}`;

/**
 * An endpoint's pending deliveries in words, the same on Today and on the endpoint's page: held while it is paused
 * (the log's "waiting"), failing and retried while it is active.
 */
export function pendingDeliveriesWords(count: number, paused: boolean): string {
  const deliveries = `${count} ${count === 1 ? 'delivery' : 'deliveries'}`;
  return paused ? `${deliveries} waiting for the endpoint to resume` : `${deliveries} retrying`;
}

/** A delivery's state in words, as its receiver saw it. */
export function stateWords(state: DeliveryState, zone: string): Html | string {
  switch (state.kind) {
    case 'succeeded':
      return `Succeeded after ${attempts(state.attempts)}`;
    case 'queued':
      return 'Not tried yet';
    case 'retrying':
      return html`Failing: ${attempts(state.attempts)} so far, next retry ${when(state.nextAttemptAt, zone)}`;
    case 'failed':
      return `Failed for good after ${attempts(state.attempts)}`;
    case 'waiting':
      return state.attempts > 0
        ? `Waiting for the paused endpoint, after ${attempts(state.attempts)} that failed`
        : 'Waiting for the paused endpoint';
    case 'cancelled':
      return state.supersededBy ? 'Cancelled: a resend of it succeeded' : 'Cancelled: its endpoint was deleted';
    default: {
      const unknown: never = state;
      throw new Error(`Unknown delivery state ${JSON.stringify(unknown)}`);
    }
  }
}

/** The receiver's last answer: its HTTP status, or the error that stopped the attempt. */
export function lastAnswer(d: Pick<DeliveryLogEntry, 'log'>): string {
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

function attemptsList(d: DeliveryLogEntry, zone: string): Html {
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

export interface LogView {
  deliveries: DeliveryLogEntry[];
  nextCursor: string | null;
  endpointPaused: boolean;
  query: LogQuery;
  base: string;
  /** The workspace's time zone, every time is shown in. */
  zone: string;
  /** The CSRF token when the member may resend; undefined hides the resend buttons. */
  resendCsrf?: string;
}

function deliveryRow(d: DeliveryLogEntry, v: LogView): Html {
  const state = deliveryState(d, v.endpointPaused);
  return html`<tr>
    <td>${eventKindName(d.event)}</td>
    <td>${when(d.created_at, v.zone)}</td>
    <td><span class="badge state-${state.kind}">${stateWords(state, v.zone)}</span></td>
    <td>${lastAnswer(d)}</td>
    <td>
      <details>
        <summary>Payload and attempts<span class="visually-hidden"> of delivery ${d.id}</span></summary>
        <p>Event ${d.event_id}; delivery ${d.id}.</p>
        <h3>Payload</h3>
        <pre>${indented(d.request_body)}</pre>
        ${d.log.length ? attemptsList(d, v.zone) : html`<p>No attempt yet.</p>`}
        ${
          v.resendCsrf
            ? html`<form method="post" action="${v.base}/deliveries/${d.id}/resend">
                ${csrfField(v.resendCsrf)}<button type="submit">Resend this delivery</button>
              </form>`
            : ''
        }
      </details>
    </td>
  </tr>`;
}

function filterForm(v: LogView): Html {
  return html`<form method="get" action="${v.base}" class="filters">
    ${choice({
      name: 'state',
      label: 'State',
      options: DELIVERY_FILTERS.map((f) => [f, FILTER_WORDS[f]] as const),
      value: v.query.state ?? '',
      empty: 'any',
    })}
    <div class="field">
      <label for="f-event">Event types</label>
      <p class="hint" id="f-event-hint">Kinds separated by commas, or a prefix such as lead.*</p>
      <input
        id="f-event"
        name="event"
        value="${v.query.event ?? ''}"
        list="event-kinds"
        aria-describedby="f-event-hint"
      />
      <datalist id="event-kinds">
        ${EVENT_KINDS.map((k) => html`<option value="${k}"></option>`)}
        <option value="lead.*"></option>
        <option value="application.*"></option>
      </datalist>
    </div>
    ${field({ name: 'since', label: `Since (${v.zone})`, type: 'datetime-local', value: v.query.since ?? '' })}
    <button type="submit">Filter</button>
  </form>`;
}

/** The endpoint's delivery log: the filters, a row per delivery with its state and last answer, and paging. */
export function deliveryLogSection(v: LogView): Html {
  const q = v.query;
  const older = v.nextCursor
    ? `?${new URLSearchParams({ ...(q.state ? { state: q.state } : {}), ...(q.event ? { event: q.event } : {}), ...(q.since ? { since: q.since } : {}), cursor: v.nextCursor })}`
    : undefined;
  return html`<section aria-labelledby="log">
    <h2 id="log">Delivery log</h2>
    ${filterForm(v)}
    ${
      v.deliveries.length === 0
        ? notice('No delivery matches.')
        : table({
            caption: 'Deliveries, newest first',
            headings: ['Event', 'Created', 'State', 'Last answer', 'Details'],
            rows: v.deliveries.map((d) => deliveryRow(d, v)),
          })
    }
    ${older ? html`<p><a href="${v.base}${older}">Older deliveries</a></p>` : ''}
  </section>`;
}
