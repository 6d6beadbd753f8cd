import type { AppServices } from '../../bootstrap.js';
import { DELIVERY_FILTERS, type DeliveryFilter } from '../../webhooks/delivery-state.js';
import { EVENT_KINDS } from '../../shared/enums.js';
import type { MemberView } from '../context.js';
import { html, type Html } from '../html.js';
import { choice, field } from '../layout.js';
import { renderList } from '../list/component.js';
import { deliveryLog, type LogEndpoint } from '../list/lists/deliveries.js';
import type { Query } from '../list/spec.js';
import { timeZoneOf } from '../time.js';

export const FILTER_WORDS: Record<DeliveryFilter, string> = {
  failing: 'Failing or failed',
  succeeded: 'Succeeded',
  retrying: 'Failing, will retry',
  failed: 'Failed for good',
  waiting: 'Waiting for the endpoint to resume',
  queued: 'Not tried yet',
  cancelled: 'Cancelled',
};

/**
 * An endpoint's pending deliveries in words, the same on Today and on the endpoint's page: held while it is paused
 * (the log's "waiting"), failing and retried while it is active.
 */
export function pendingDeliveriesWords(count: number, paused: boolean): string {
  const deliveries = `${count} ${count === 1 ? 'delivery' : 'deliveries'}`;
  return paused ? `${deliveries} waiting for the endpoint to resume` : `${deliveries} retrying`;
}

function filterForm(base: string, query: Query, zone: string, errors: Record<string, string>): Html {
  return html`<form method="get" action="${base}" class="filters" role="search" aria-label="Filter the deliveries">
    ${choice({
      name: 'state',
      label: 'State',
      options: DELIVERY_FILTERS.map((f) => [f, FILTER_WORDS[f]] as const),
      value: query.state ?? '',
      empty: 'any',
      error: errors.state,
    })}
    <div class="field">
      <label for="f-event">Event types</label>
      <p class="hint" id="f-event-hint">Kinds separated by commas, or a prefix such as lead.*</p>
      <input
        id="f-event"
        name="event"
        value="${query.event ?? ''}"
        list="event-kinds"
        aria-describedby="f-event-hint"
      />
      <datalist id="event-kinds">
        ${EVENT_KINDS.map((k) => html`<option value="${k}"></option>`)}
        <option value="lead.*"></option>
        <option value="application.*"></option>
      </datalist>
    </div>
    ${field({ name: 'since', label: `Since (${zone})`, type: 'datetime-local', value: query.since ?? '', error: errors.since })}
    <button type="submit">Filter</button>
  </form>`;
}

/**
 * The endpoint's delivery log: its filters above the list component's table (sortable columns, the count, pages, a
 * page size, a selection and CSV files: src/console/list/lists/deliveries.ts). A filter it cannot read answers 400
 * with the refusal by its field.
 */
export async function deliveryLogSection(
  services: Pick<AppServices, 'pool' | 'now'>,
  view: MemberView,
  endpoint: LogEndpoint,
  query: Query,
): Promise<{ status: number; section: Html }> {
  const base = `/console/w/${view.workspace.slug}/webhooks/${endpoint.id}`;
  const list = await renderList(services, view, deliveryLog(endpoint), query);
  return {
    status: list.status,
    section: html`<section aria-labelledby="log">
      <h2 id="log">Delivery log</h2>
      ${filterForm(base, query, timeZoneOf(view.workspace), list.errors)} ${list.body}
    </section>`,
  };
}
