import type { FastifyRequest } from 'fastify';
import type { AppServices } from '../../bootstrap.js';
import { staffContext } from '../../commands/run-command.js';
import { resumeEndpoint, rotateEndpointSecret, sendTestEvent } from '../../commands/webhooks/endpoints.js';
import type { TypedApp } from '../../http/typed-app.js';
import { findEndpoint, listAllEndpoints, toPublicEndpoint } from '../../projections/webhook-endpoints.js';
import { listDeliveries, resendDelivery } from '../../webhooks/deliveries.js';
import {
  allow,
  allowRecent,
  ConsoleRefusal,
  formOf,
  memberView,
  needsPassword,
  sendPage,
  type MemberView,
} from '../context.js';
import { html, table } from '../html.js';
import { csrfField, field, notice, page, select, signInAgain } from '../layout.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const DAY_MS = 24 * 3600_000;
const STATUSES = ['pending', 'succeeded', 'failed', 'cancelled'] as const;

/** Succeeded and failed deliveries of the last day, per endpoint of the workspace. */
export async function recentOutcomes(
  services: AppServices,
  tenantId: string,
): Promise<Map<string, { ok: number; failed: number }>> {
  const result = await services.pool.query<{ endpoint_id: string; ok: number; failed: number }>(
    `SELECT d.endpoint_id, count(*) FILTER (WHERE d.status = 'succeeded')::int AS ok,
            count(*) FILTER (WHERE d.status = 'failed')::int AS failed
       FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
      WHERE e.tenant_id = $1 AND d.created_at >= $2
      GROUP BY d.endpoint_id`,
    [tenantId, new Date(services.now().getTime() - DAY_MS)],
  );
  return new Map(result.rows.map((r) => [r.endpoint_id, r]));
}

/** How many failed deliveries since a time a "retry failed" would send again (none of them already resent). */
async function failedSince(services: AppServices, endpointId: string, since: Date): Promise<string[]> {
  const result = await services.pool.query<{ id: string }>(
    `SELECT id FROM webhook_deliveries
      WHERE endpoint_id = $1 AND status = 'failed' AND created_at >= $2 AND superseded_by IS NULL
      ORDER BY created_at`,
    [endpointId, since],
  );
  return result.rows.map((r) => r.id);
}

async function endpointOf(services: AppServices, view: MemberView, request: FastifyRequest) {
  const id = (request.params as { id: string }).id;
  const row = UUID.test(id) ? await findEndpoint(services.pool, view.workspace.id, id) : undefined;
  if (!row) throw new ConsoleRefusal(404, 'No such webhook endpoint in this workspace.');
  return {
    row,
    context: staffContext(
      view.workspace.id,
      row.sandbox,
      { type: 'user', user_id: view.member.id, email: view.member.email, name: view.member.name },
      services.now(),
    ),
  };
}

function parseSince(text: string | undefined): Date | undefined {
  if (!text) return undefined;
  const date = new Date(`${text}Z`);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/** The endpoints of the workspace, both modes, with their success rate over the last day. */
async function endpointsPage(services: AppServices, request: FastifyRequest) {
  const view = await memberView(services, request);
  allow(view, 'webhooks.view');
  const now = services.now();
  const endpoints = await listAllEndpoints(services.pool, view.workspace.id);
  const outcomes = await recentOutcomes(services, view.workspace.id);
  const rate = (id: string) => {
    const o = outcomes.get(id);
    return o && o.ok + o.failed > 0
      ? `${Math.round((100 * o.ok) / (o.ok + o.failed))}% of ${o.ok + o.failed}`
      : 'no deliveries';
  };
  return page(
    view.frame('Webhooks', 'Webhooks'),
    html`${table({
      caption: 'Endpoints (success in the last 24 hours)',
      headings: ['URL', 'Mode', 'Status', 'Success'],
      rows: endpoints.map((e) => {
        const p = toPublicEndpoint(e, now);
        return html`<tr>
          <td><a href="/console/w/${view.workspace.slug}/webhooks/${e.id}">${p.url}</a></td>
          <td>${e.sandbox ? 'test' : 'live'}</td>
          <td>${p.status}</td>
          <td>${rate(e.id)}</td>
        </tr>`;
      }),
    })}`,
  );
}

type EndpointPageOptions = {
  message?: string;
  secret?: string;
  errors?: Record<string, string>;
  preview?: { since: string; count: number };
};
type LogQuery = { status?: string; event?: string; since?: string; cursor?: string };
type PublicEndpoint = ReturnType<typeof toPublicEndpoint>;
type Deliveries = Awaited<ReturnType<typeof listDeliveries>>['data'];

/** One endpoint: its state, its actions and its delivery log, filtered by the query. */
async function endpointPage(
  services: AppServices,
  request: FastifyRequest,
  view: MemberView,
  o: EndpointPageOptions = {},
) {
  allow(view, 'webhooks.view');
  const { row } = await endpointOf(services, view, request);
  const now = services.now();
  const p = toPublicEndpoint(row, now);
  const q = request.query as LogQuery;
  const log = await deliveryLog(services, row.id, q, now);
  const lastFailures =
    p.status === 'paused'
      ? (await listDeliveries(services.pool, row.id, { limit: 5, now, status: 'failed' })).data
      : [];
  const base = `/console/w/${view.workspace.slug}/webhooks/${row.id}`;
  const csrf = csrfField(view.signedIn.csrf);
  return page(
    view.frame(`Endpoint ${p.url}`, 'Webhooks'),
    html`${notice(o.message)}
      ${
        o.secret
          ? html`<div role="status">
              <p>The new signing secret, shown this once:</p>
              <p class="secret" id="new-secret">${o.secret}</p>
            </div>`
          : ''
      }
      <p>Mode ${row.sandbox ? 'test' : 'live'}; status <strong>${p.status}</strong>; events ${p.events.join(', ')}.</p>
      ${p.previous_secret_valid_until ? html`<p>The previous secret keeps signing beside the new one until ${p.previous_secret_valid_until}.</p>` : ''}
      ${p.status === 'paused' ? pausedSection(p, lastFailures, base, csrf) : ''}
      ${actionsSection(services, view, o, base, csrf)} ${deliveryLogSection(log, q, base, csrf)}`,
  );
}

/** A page of the endpoint's deliveries as the log's filters (status, event, since, cursor) ask. */
async function deliveryLog(services: AppServices, endpointId: string, q: LogQuery, now: Date) {
  const since = parseSince(q.since);
  const status = STATUSES.find((value) => value === q.status);
  return listDeliveries(services.pool, endpointId, {
    limit: 50,
    now,
    before: q.cursor && UUID.test(q.cursor) ? q.cursor : undefined,
    ...(status ? { status } : {}),
    ...(q.event ? { event: q.event.slice(0, 100) } : {}),
    ...(since ? { since } : {}),
  });
}

function pausedSection(p: PublicEndpoint, lastFailures: Deliveries, base: string, csrf: ReturnType<typeof csrfField>) {
  return html`<section aria-labelledby="paused">
    <h2 id="paused">Paused</h2>
    <p>
      Why: ${p.paused_reason ?? 'unknown'} (since ${p.paused_at}), after ${p.consecutive_failures} failures in a row.
    </p>
    <ul>
      ${lastFailures.map(
        (d) => html`<li>${d.event} ${d.created_at}: ${d.log.at(-1)?.response_status ?? d.log.at(-1)?.error ?? ''}</li>`,
      )}
    </ul>
    <form method="post" action="${base}/resume">${csrf}<button type="submit">Resume the endpoint</button></form>
  </section>`;
}

function actionsSection(
  services: AppServices,
  view: MemberView,
  o: EndpointPageOptions,
  base: string,
  csrf: ReturnType<typeof csrfField>,
) {
  const errors = o.errors ?? {};
  return html`<section aria-labelledby="actions">
    <h2 id="actions">Actions</h2>
    <form method="post" action="${base}/test">${csrf}<button type="submit">Send a test event</button></form>
    <form method="post" action="${base}/rotate-secret">
      ${csrf}
      ${needsPassword(services, view.signedIn, 'webhooks.rotate_secret') ? signInAgain(view.signedIn.csrf, errors.password) : ''}
      <button type="submit">Rotate the secret</button>
    </form>
    <form method="get" action="${base}/retry-failed">
      ${field({ name: 'since', label: 'Retry every failed delivery since (UTC)', type: 'datetime-local', required: true, error: errors.since })}
      <button type="submit">Preview</button>
    </form>
    ${
      o.preview
        ? html`<form method="post" action="${base}/retry-failed">
            ${csrf}<input type="hidden" name="since" value="${o.preview.since}" />
            <p role="status">${o.preview.count} failed deliveries since ${o.preview.since} UTC would be sent again.</p>
            <button type="submit" ${o.preview.count === 0 ? html`disabled` : ''}>
              Retry ${o.preview.count} deliveries
            </button>
          </form>`
        : ''
    }
  </section>`;
}

function deliveryLogSection(
  log: Awaited<ReturnType<typeof listDeliveries>>,
  q: LogQuery,
  base: string,
  csrf: ReturnType<typeof csrfField>,
) {
  const older = log.next_cursor
    ? `?${new URLSearchParams({ ...(q.status ? { status: q.status } : {}), ...(q.event ? { event: q.event } : {}), ...(q.since ? { since: q.since } : {}), cursor: log.next_cursor })}`
    : undefined;
  return html`<section aria-labelledby="log">
    <h2 id="log">Delivery log</h2>
    <form method="get" action="${base}">
      ${select({ name: 'status', label: 'Status', options: ['', 'pending', 'succeeded', 'failed', 'cancelled'], value: q.status ?? '' })}
      ${field({ name: 'event', label: 'Event type', value: q.event ?? '' })}
      ${field({ name: 'since', label: 'Since (UTC)', type: 'datetime-local', value: q.since ?? '' })}
      <button type="submit">Filter</button>
    </form>
    ${log.data.map(
      (d) =>
        html`<details>
          <summary>${d.event} · ${d.status} · ${d.created_at} · event ${d.event_id}</summary>
          <h3>Request</h3>
          <pre>${d.request_body}</pre>
          ${d.log.map(
            (a) =>
              html`<h4>
                  Attempt ${a.attempt} at ${a.attempted_at}: ${a.response_status ?? a.error ?? ''} in ${a.duration_ms}
                  ms
                </h4>
                <pre>${JSON.stringify(a.request_headers, null, 1)}</pre>
                <pre>${a.response_body ?? ''}</pre>`,
          )}
          <form method="post" action="${base}/deliveries/${d.id}/resend">
            ${csrf}<button type="submit">Resend this delivery</button>
          </form>
        </details>`,
    )}
    ${log.data.length === 0 ? notice('No delivery matches.') : ''}
    ${older ? html`<p><a href="${base}${older}">Older deliveries</a></p>` : ''}
  </section>`;
}

export function registerWebhookPages(app: TypedApp, services: AppServices): void {
  app.get('/w/:slug/webhooks', async (request, reply) => sendPage(reply, await endpointsPage(services, request)));

  app.get('/w/:slug/webhooks/:id', async (request, reply) => {
    const view = await memberView(services, request);
    return sendPage(reply, await endpointPage(services, request, view));
  });

  app.post('/w/:slug/webhooks/:id/resume', async (request, reply) => {
    const view = await memberView(services, request);
    allow(view, 'webhooks.resume');
    const { row, context } = await endpointOf(services, view, request);
    await resumeEndpoint(services, context, row.id);
    return sendPage(
      reply,
      await endpointPage(services, request, view, {
        message: 'The endpoint is active again; what waited is being sent.',
      }),
    );
  });

  app.post('/w/:slug/webhooks/:id/test', async (request, reply) => {
    const view = await memberView(services, request);
    allow(view, 'webhooks.test');
    const { row, context } = await endpointOf(services, view, request);
    const sent = await sendTestEvent(services, context, row.id);
    return sendPage(
      reply,
      await endpointPage(services, request, view, {
        message: `A webhook.test event (${sent.event_id}) is on its way.`,
      }),
      202,
    );
  });

  app.post('/w/:slug/webhooks/:id/rotate-secret', async (request, reply) => {
    const view = await memberView(services, request);
    const form = formOf(request);
    try {
      await allowRecent(services, view, 'webhooks.rotate_secret', form);
    } catch (error) {
      if (error instanceof ConsoleRefusal && error.field)
        return sendPage(
          reply,
          await endpointPage(services, request, view, { errors: { [error.field]: error.message } }),
          error.status,
        );
      throw error;
    }
    const { row, context } = await endpointOf(services, view, request);
    const rotated = await rotateEndpointSecret(services, context, row.id);
    return sendPage(
      reply,
      await endpointPage(services, request, view, { secret: rotated.secret, message: 'The secret is rotated.' }),
    );
  });

  app.post('/w/:slug/webhooks/:id/deliveries/:deliveryId/resend', async (request, reply) => {
    const view = await memberView(services, request);
    allow(view, 'webhooks.resend');
    const { row } = await endpointOf(services, view, request);
    const deliveryId = (request.params as { deliveryId: string }).deliveryId;
    const resent = UUID.test(deliveryId)
      ? await resendDelivery(services.pool, row.id, deliveryId, services.now())
      : undefined;
    if (!resent) throw new ConsoleRefusal(404, 'No such delivery of this endpoint.');
    return sendPage(
      reply,
      await endpointPage(services, request, view, {
        message: `Resent as delivery ${resent.id}, with the same event id ${resent.event_id}.`,
      }),
      201,
    );
  });

  app.get('/w/:slug/webhooks/:id/retry-failed', async (request, reply) => {
    const view = await memberView(services, request);
    allow(view, 'webhooks.retry_failed');
    const { row } = await endpointOf(services, view, request);
    const sinceText = (request.query as { since?: string }).since;
    const since = parseSince(sinceText);
    if (!since)
      return sendPage(
        reply,
        await endpointPage(services, request, view, { errors: { since: 'Enter a date and time.' } }),
        400,
      );
    const count = (await failedSince(services, row.id, since)).length;
    return sendPage(reply, await endpointPage(services, request, view, { preview: { since: sinceText!, count } }));
  });

  app.post('/w/:slug/webhooks/:id/retry-failed', async (request, reply) => {
    const view = await memberView(services, request);
    allow(view, 'webhooks.retry_failed');
    const { row } = await endpointOf(services, view, request);
    const since = parseSince(formOf(request).since);
    if (!since)
      return sendPage(
        reply,
        await endpointPage(services, request, view, { errors: { since: 'Enter a date and time.' } }),
        400,
      );
    let resent = 0;
    for (const id of await failedSince(services, row.id, since))
      if (await resendDelivery(services.pool, row.id, id, services.now())) resent += 1;
    return sendPage(
      reply,
      await endpointPage(services, request, view, { message: `${resent} failed deliveries are being sent again.` }),
      202,
    );
  });
}
