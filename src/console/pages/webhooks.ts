import type { FastifyReply } from 'fastify';
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import type { AppServices } from '../../bootstrap.js';
import { isCommandError, WebhookLimitError, WebhookUrlRefusedError } from '../../commands/errors.js';
import { previewReplay, replayEndpointEvents, type ReplayRequest } from '../../commands/webhooks/replay.js';
import { staffContext } from '../../commands/run-command.js';
import {
  changeEndpoint,
  changeEndpointVersion,
  createEndpoint,
  deleteEndpoint,
  disableEndpoint,
  resumeEndpoint,
  rotateEndpointSecret,
  sendTestEvent,
  updateEndpointSettings,
  type CreateEndpointInput,
} from '../../commands/webhooks/endpoints.js';
import { WebhookEndpointCreate } from '../../http/schemas/webhook.js';
import type { TypedApp } from '../../http/typed-app.js';
import { can } from '../../identity/permissions.js';
import {
  findEndpoint,
  listAllEndpoints,
  toPublicEndpoint,
  type EndpointRow,
} from '../../projections/webhook-endpoints.js';
import { EVENT_KINDS } from '../../shared/enums.js';
import {
  DELIVERY_LOG_RETENTION_MS,
  listDeliveries,
  resendDelivery,
  type DeliveryLogEntry,
} from '../../webhooks/deliveries.js';
import { allow, allowRecent, ConsoleRefusal, needsPassword, sendPage, type MemberView } from '../context.js';
import { actorOf, refusalErrors } from '../forms.js';
import { html, table, type Html } from '../html.js';
import { choice, csrfField, field, notice, page, signInAgain } from '../layout.js';
import { confirmPage } from './confirm.js';
import { keepOneTimeSecret } from '../one-time-secret.js';
import {
  findDeletedEndpoint,
  findDelivery,
  listDeletedEndpoints,
  recentAttemptOutcomes,
  type DeletedEndpoint,
  waitingDeliveries,
} from '../queries/webhooks.js';
import { viewOf } from '../routes.js';
import { momentOf, timeZoneOf, when } from '../time.js';
import { deliveryLogSection, pendingDeliveriesWords } from './webhook-log.js';
import {
  DELIVERY_LOG_FILTERS,
  deliveryLog as deliveryLogList,
  lastAnswer,
  type LogEndpoint,
} from '../list/lists/deliveries.js';
import { listQuerySchema, registerRecordListExport } from '../list/routes.js';
import type { Query } from '../list/spec.js';
import { eventKindName } from '../labels.js';
import { CURRENT_PAYLOAD_VERSION, isPayloadVersion, PAYLOAD_VERSIONS } from '../../webhooks/versions/index.js';

/** A payload version as the console names it: the date, and whether it is the newest. */
const versionWords = (version: string) => (version === CURRENT_PAYLOAD_VERSION ? `${version} (current)` : version);

/** Subscribed event kinds by name, each with the code integrators subscribe with. */
const eventKindList = (kinds: readonly string[]): Html | string =>
  kinds.length === 0
    ? '—'
    : html`${kinds.map((k, i) => html`${i > 0 ? ', ' : ''}${eventKindName(k)} (<code>${k}</code>)`)}`;

/** Text of a form field: no NUL byte, at most `max` characters. */
const Text = (max: number) => Type.String({ maxLength: max, pattern: '^[^\\u0000]*$' });
const Uuid = Type.String({ format: 'uuid' });
const SlugParams = Type.Object({ slug: Text(100) });
const EndpointParams = Type.Object({ slug: Text(100), id: Uuid });
const DeliveryParams = Type.Object({ slug: Text(100), id: Uuid, deliveryId: Uuid });
const CsrfOnly = Type.Object({ _csrf: Type.Optional(Text(200)) });
/** The endpoint page's query: the delivery log's filters and list parts, and what an action redirected back with. */
const LogQuerySchema = listQuerySchema(
  { filterNames: DELIVERY_LOG_FILTERS },
  { done: Type.Optional(Text(20)), n: Type.Optional(Text(10)) },
);
const EndpointForm = Type.Object({
  _csrf: Type.Optional(Text(200)),
  url: Type.Optional(Text(4000)),
  description: Type.Optional(Text(1000)),
  events: Type.Optional(Type.Union([Text(60), Type.Array(Text(60), { maxItems: 40 })])),
  mode: Type.Optional(Text(10)),
  rate_limit_per_second: Type.Optional(Text(20)),
});
type EndpointFormBody = Static<typeof EndpointForm>;
const VersionForm = Type.Object({ _csrf: Type.Optional(Text(200)), payload_version: Type.Optional(Text(20)) });
const RateForm = Type.Object({ _csrf: Type.Optional(Text(200)), rate_limit_per_second: Type.Optional(Text(20)) });

/** An endpoint's rate in words. */
const rateWords = (rate: number | null) =>
  rate === null ? 'no limit' : `at most ${rate} deliver${rate === 1 ? 'y' : 'ies'} a second`;

/** The rate as typed in the form: a whole number from 1 to 1000, or nothing for no limit; a string says what is wrong. */
function rateOf(text: string | undefined): number | null | string {
  const typed = (text ?? '').trim();
  if (typed === '') return null;
  if (!/^[0-9]+$/.test(typed)) return 'Type a whole number from 1 to 1000, or leave it empty for no limit.';
  const rate = Number(typed);
  return rate >= 1 && rate <= 1000 ? rate : 'Type a whole number from 1 to 1000, or leave it empty for no limit.';
}
const RotateForm = Type.Object({ _csrf: Type.Optional(Text(200)), password: Type.Optional(Text(1000)) });
const SinceQuery = Type.Object({ since: Type.Optional(Text(40)) });
const SinceForm = Type.Object({ _csrf: Type.Optional(Text(200)), since: Type.Optional(Text(40)) });

type Errors = Record<string, string>;

/** What an action redirected back with (`?done=`): the outcome in words, never text taken from the address. */
const OUTCOMES: Record<string, (n: number) => string> = {
  created: () => 'The endpoint is created.',
  changed: () => 'The endpoint is changed.',
  version: () => 'The payload version is changed: deliveries made from now on are in it.',
  rate: () => 'The rate limit is changed: the endpoint’s deliveries keep to it from now on.',
  disabled: () => 'The endpoint is disabled: what comes for it waits until it is resumed.',
  resumed: () => 'The endpoint is active again; what waited is being sent.',
  test: () => 'A test event is on its way.',
  resent: () => 'The delivery is resent, with the same event id.',
  retried: (n) => `${n} failing deliveries are being sent again.`,
  deleted: () => 'The endpoint is deleted. Its delivery log stays readable for 30 days.',
};

function outcomeOf(query: { done?: string; n?: string }): string | undefined {
  const say = query.done ? OUTCOMES[query.done] : undefined;
  return say?.(Number(query.n ?? 0) || 0);
}

const baseOf = (view: MemberView) => `/console/w/${view.workspace.slug}/webhooks`;

/** The endpoint of the path (live or test) as a command's target, or not found. */
async function endpointOf(services: AppServices, view: MemberView, id: string) {
  const row = await findEndpoint(services.pool, view.workspace.id, id);
  if (!row) throw new ConsoleRefusal(404, 'No such webhook endpoint in this workspace.');
  return { row, context: staffContext(view.workspace.id, row.sandbox, actorOf(view), services.now()) };
}

/** The endpoint whose log is asked for, live or deleted within the log's retention; not found in another workspace. */
async function logEndpointOf(services: AppServices, view: MemberView, id: string): Promise<LogEndpoint> {
  allow(view, 'webhooks.view');
  if (await findEndpoint(services.pool, view.workspace.id, id)) return { id, deleted: false };
  if (await findDeletedEndpoint(services.pool, view.workspace.id, id, services.now())) return { id, deleted: true };
  throw new ConsoleRefusal(404, 'No such webhook endpoint in this workspace.');
}

/** Success over the last day, from attempts: a delivery that fails and retries counts each failure. */
function successRate(outcome: { attempts: number; succeeded: number } | undefined): string {
  if (!outcome || outcome.attempts === 0) return 'no attempts in the last 24 hours';
  return `${Math.round((100 * outcome.succeeded) / outcome.attempts)}% of ${outcome.attempts} attempts`;
}

/** Why an endpoint is paused, said once (the reason already holds the count of failures). */
function pausedWords(row: Pick<EndpointRow, 'paused_reason' | 'paused_at'>, zone: string): Html {
  return html`Paused since ${when(row.paused_at, zone)}: ${row.paused_reason ?? 'no reason recorded'}.`;
}

function deletedSection(view: MemberView, deleted: DeletedEndpoint[]): Html | string {
  if (deleted.length === 0) return '';
  return table({
    caption: 'Deleted endpoints (their delivery logs are kept for 30 days)',
    headings: ['URL', 'Mode', 'Deleted', 'Log kept until'],
    rows: deleted.map(
      (e) =>
        html`<tr>
          <td><a href="${baseOf(view)}/${e.id}">${e.url}</a></td>
          <td>${e.sandbox ? 'test' : 'live'}</td>
          <td>${when(e.deleted_at, timeZoneOf(view.workspace))}</td>
          <td>${when(new Date(e.deleted_at.getTime() + DELIVERY_LOG_RETENTION_MS), timeZoneOf(view.workspace))}</td>
        </tr>`,
    ),
  });
}

/** The endpoints of the workspace, both modes, with their success over the last day, and the deleted ones. */
async function endpointsPage(services: AppServices, view: MemberView, message?: string) {
  const now = services.now();
  const [endpoints, outcomes, deleted] = await Promise.all([
    listAllEndpoints(services.pool, view.workspace.id),
    recentAttemptOutcomes(services.pool, view.workspace.id, now),
    listDeletedEndpoints(services.pool, view.workspace.id, now),
  ]);
  return page(
    view.frame('Webhooks', 'Webhooks'),
    html`${notice(message)}
    ${can(view.role, 'webhooks.manage') ? html`<p><a href="${baseOf(view)}/new">Add an endpoint</a></p>` : ''}
    ${table({
      caption: 'Endpoints (success of the attempts in the last 24 hours)',
      headings: ['URL', 'Mode', 'Status', 'Success'],
      rows: endpoints.map(
        (e) =>
          html`<tr>
            <td><a href="${baseOf(view)}/${e.id}">${e.url}</a></td>
            <td>${e.sandbox ? 'test' : 'live'}</td>
            <td>${e.status === 'paused' ? pausedWords(e, timeZoneOf(view.workspace)) : 'active'}</td>
            <td>${successRate(outcomes.get(e.id))}</td>
          </tr>`,
      ),
    })}
    ${deletedSection(view, deleted)}`,
  );
}

interface EndpointPageOptions {
  message?: string;
  errors?: Errors;
  preview?: { since: string; count: number };
}

/** One endpoint: its state, what the member's role may do with it, and its delivery log. */
async function endpointPage(
  services: AppServices,
  view: MemberView,
  row: EndpointRow,
  q: Query,
  o: EndpointPageOptions = {},
): Promise<{ status: number; body: string }> {
  const p = toPublicEndpoint(row, services.now());
  const paused = p.status === 'paused';
  const log = await deliveryLogSection(services, view, { id: row.id, deleted: false }, q);
  const base = `${baseOf(view)}/${row.id}`;
  const body = page(
    view.frame(`Endpoint ${p.url}`, 'Webhooks'),
    html`${notice(o.message)}
      <dl class="facts">
        <dt>Mode</dt>
        <dd>${row.sandbox ? 'test' : 'live'}</dd>
        <dt>Status</dt>
        <dd>${paused ? 'paused (why: below)' : 'active'}</dd>
        <dt>Description</dt>
        <dd>${p.description ?? '—'}</dd>
        <dt>Events</dt>
        <dd>${eventKindList(p.events)}</dd>
        <dt>Payload version</dt>
        <dd>${versionWords(p.payload_version)} (<a href="/docs/payload-versions">what each version changed</a>)</dd>
        <dt>Rate limit</dt>
        <dd>${rateWords(p.rate_limit_per_second)}</dd>
      </dl>
      ${p.previous_secret_valid_until ? html`<p>The previous secret keeps signing beside the new one until ${when(p.previous_secret_valid_until, timeZoneOf(view.workspace))}.</p>` : ''}
      ${paused ? await pausedSection(services, view, row, base) : ''}
      ${actionsSection(services, view, o, base, p.payload_version, p.rate_limit_per_second)} ${log.section}`,
  );
  return { status: log.status, body };
}

async function pausedSection(services: AppServices, view: MemberView, row: EndpointRow, base: string) {
  const now = services.now();
  const [last, waiting] = await Promise.all([
    listDeliveries(services.pool, row.id, { limit: 5, now, state: { filter: 'failing', endpointPaused: true } }),
    waitingDeliveries(services.pool, row.id),
  ]);
  return html`<section aria-labelledby="paused">
    <h2 id="paused">Paused</h2>
    <p>
      ${pausedWords(row, timeZoneOf(view.workspace))} ${pendingDeliveriesWords(waiting, true)}: what comes for it waits
      (and is listed as waiting below) until it is resumed; test events are still sent.
    </p>
    ${
      last.data.length
        ? html`<p>Its last failures, by what the receiver answered:</p>
            <ul>
              ${answersOf(last.data).map(
                (a) =>
                  html`<li>
                    ${a.count} × ${a.answer} (the latest on a delivery created
                    ${when(a.latest, timeZoneOf(view.workspace))})
                  </li>`,
              )}
            </ul>`
        : ''
    }
    ${
      can(view.role, 'webhooks.resume')
        ? html`<form method="post" action="${base}/resume">
            ${csrfField(view.signedIn.csrf)}<button type="submit">Resume the endpoint</button>
          </form>`
        : ''
    }
  </section>`;
}

/** The deliveries' last answers, each once with how many gave it and the newest delivery's time. */
function answersOf(deliveries: DeliveryLogEntry[]): { answer: string; count: number; latest: string }[] {
  const byAnswer = new Map<string, { answer: string; count: number; latest: string }>();
  for (const d of deliveries) {
    const answer = lastAnswer(d);
    const seen = byAnswer.get(answer);
    if (seen) seen.count += 1;
    else byAnswer.set(answer, { answer, count: 1, latest: d.created_at });
  }
  return [...byAnswer.values()];
}

function actionsSection(
  services: AppServices,
  view: MemberView,
  o: EndpointPageOptions,
  base: string,
  version: string,
  rate: number | null,
) {
  const errors = o.errors ?? {};
  const csrf = csrfField(view.signedIn.csrf);
  const may = (operation: Parameters<typeof can>[1]) => can(view.role, operation);
  if (!may('webhooks.test') && !may('webhooks.rotate_secret') && !may('webhooks.replay') && !may('webhooks.manage'))
    return '';
  return html`<section aria-labelledby="actions">
    <h2 id="actions">Actions</h2>
    ${
      may('webhooks.manage')
        ? html`<p>
            <a href="${base}/edit">Change the endpoint</a> · <a href="${base}/disable">Disable it</a> ·
            <a href="${base}/delete">Delete it</a>
          </p>`
        : ''
    }
    ${may('webhooks.manage') ? versionForm(view, base, version, o.errors?.payload_version) : ''}
    ${may('webhooks.manage') ? rateForm(view, base, rate, o.errors?.rate_limit_per_second) : ''}
    ${
      may('webhooks.test')
        ? html`<form method="post" action="${base}/test">${csrf}<button type="submit">Send a test event</button></form>`
        : ''
    }
    ${
      may('webhooks.rotate_secret')
        ? html`<form method="post" action="${base}/rotate-secret">
            ${csrf}
            ${needsPassword(services, view.signedIn, 'webhooks.rotate_secret') ? signInAgain(view.signedIn.csrf, errors.password) : ''}
            <button type="submit">Rotate the secret</button>
          </form>`
        : ''
    }
    ${may('webhooks.replay') ? retryForms(o, base, csrf, timeZoneOf(view.workspace)) : ''}
  </section>`;
}

/** Moves the endpoint to another payload version; what was already sent keeps its own. */
function versionForm(view: MemberView, base: string, current: string, error?: string): Html {
  return html`<form method="post" action="${base}/payload-version">
    ${csrfField(view.signedIn.csrf)}
    ${choice({
      name: 'payload_version',
      label: 'Payload version of the deliveries made from now on',
      options: [...PAYLOAD_VERSIONS].reverse().map((v) => [v, versionWords(v)] as const),
      value: current,
      error,
    })}
    <button type="submit">Change the payload version</button>
  </form>`;
}

/** Sets or removes the most deliveries a second the endpoint receives. */
function rateForm(view: MemberView, base: string, current: number | null, error?: string): Html {
  return html`<form method="post" action="${base}/rate-limit">
    ${csrfField(view.signedIn.csrf)}
    ${field({
      name: 'rate_limit_per_second',
      label: 'Most deliveries a second (1 to 1000; empty for no limit)',
      type: 'number',
      value: current === null ? '' : String(current),
      hint: 'Counted over any one second until each delivery was answered; what waits for it is not a failure.',
      error,
    })}
    <button type="submit">Change the rate limit</button>
  </form>`;
}

function retryForms(o: EndpointPageOptions, base: string, csrf: Html, zone: string): Html {
  return html`<form method="get" action="${base}/retry-failed">
      ${field({ name: 'since', label: `Retry every failing delivery since (${zone})`, type: 'datetime-local', required: true, error: o.errors?.since })}
      <button type="submit">Preview</button>
    </form>
    ${
      o.preview
        ? html`<form method="post" action="${base}/retry-failed">
            ${csrf}<input type="hidden" name="since" value="${o.preview.since}" />
            <p role="status">${o.preview.count} failing deliveries since ${o.preview.since} UTC would be sent again.</p>
            <button type="submit" ${o.preview.count === 0 ? html`disabled` : ''}>
              Retry ${o.preview.count} deliveries
            </button>
          </form>`
        : ''
    }`;
}

/** A deleted endpoint: what it was, and its delivery log for the rest of its 30 days. */
async function deletedEndpointPage(services: AppServices, view: MemberView, e: DeletedEndpoint, q: Query) {
  const log = await deliveryLogSection(services, view, { id: e.id, deleted: true }, q);
  const body = page(
    view.frame(`Deleted endpoint ${e.url}`, 'Webhooks'),
    html`<p>
        Deleted at ${when(e.deleted_at, timeZoneOf(view.workspace))}. Its delivery log is kept until
        ${when(new Date(e.deleted_at.getTime() + DELIVERY_LOG_RETENTION_MS), timeZoneOf(view.workspace))}; nothing is
        sent to it any more.
      </p>
      <dl class="facts">
        <dt>Mode</dt>
        <dd>${e.sandbox ? 'test' : 'live'}</dd>
        <dt>Description</dt>
        <dd>${e.description ?? '—'}</dd>
        <dt>Events</dt>
        <dd>${eventKindList(e.events)}</dd>
      </dl>
      ${log.section}`,
  );
  return { status: log.status, body };
}

/** The create and change form: address, description, kinds (and the mode, for a new endpoint). */
function endpointForm(
  view: MemberView,
  o: { action: string; submit: string; values: EndpointFormBody; errors: Errors; withMode: boolean },
): Html {
  const chosen = new Set([o.values.events ?? []].flat());
  return html`<form method="post" action="${o.action}">
    ${csrfField(view.signedIn.csrf)}
    ${field({ name: 'url', label: 'Receiver’s address (HTTPS)', type: 'url', value: o.values.url ?? '', required: true, error: o.errors.url })}
    ${field({ name: 'description', label: 'Description', value: o.values.description ?? '', error: o.errors.description })}
    ${
      o.withMode
        ? html`<fieldset>
            <legend>Mode</legend>
            ${(['live', 'test'] as const).map(
              (m) =>
                html`<div>
                  <input
                    type="radio"
                    id="mode-${m}"
                    name="mode"
                    value="${m}"
                    ${(o.values.mode ?? 'live') === m ? html`checked` : ''}
                  />
                  <label for="mode-${m}" class="inline"
                    >${m === 'live' ? 'Live events' : 'Test (sandbox) events'}</label
                  >
                </div>`,
            )}
          </fieldset>`
        : ''
    }
    <fieldset ${o.errors.events ? html`aria-describedby="events-error"` : ''}>
      <legend>Events it receives</legend>
      ${EVENT_KINDS.map(
        (k) =>
          html`<div>
            <input type="checkbox" id="event-${k}" name="events" value="${k}" ${chosen.has(k) ? html`checked` : ''} />
            <label for="event-${k}" class="inline">${eventKindName(k)} <code>${k}</code></label>
          </div>`,
      )}
      ${o.errors.events ? html`<p class="error" id="events-error">${o.errors.events}</p>` : ''}
    </fieldset>
    ${field({
      name: 'rate_limit_per_second',
      label: 'Most deliveries a second (1 to 1000; empty for no limit)',
      type: 'number',
      value: o.values.rate_limit_per_second ?? '',
      error: o.errors.rate_limit_per_second,
    })}
    ${o.errors.form ? notice(o.errors.form, 'alert') : ''}
    <button type="submit">${o.submit}</button>
  </form>`;
}

/** The form read as the API's create body would be, under the API's schema; or the problems by field. */
function endpointInput(body: EndpointFormBody): CreateEndpointInput | { errors: Errors } {
  const description = (body.description ?? '').trim();
  const input = {
    url: (body.url ?? '').trim(),
    description: description === '' ? null : description,
    events: [...new Set([body.events ?? []].flat())],
  };
  const rate = rateOf(body.rate_limit_per_second);
  if (Value.Check(WebhookEndpointCreate, input) && typeof rate !== 'string')
    return { ...input, rate_limit_per_second: rate };
  const errors: Errors = typeof rate === 'string' ? { rate_limit_per_second: rate } : {};
  for (const problem of Value.Check(WebhookEndpointCreate, input) ? [] : Value.Errors(WebhookEndpointCreate, input)) {
    const about = problem.instancePath.split('/')[1] ?? 'form';
    errors[about] ??=
      about === 'url'
        ? 'Enter the receiver’s address, up to 2048 characters.'
        : about === 'events'
          ? 'Choose at least one kind of event.'
          : about === 'description'
            ? 'Keep the description to 500 characters.'
            : 'The form could not be read.';
  }
  return { errors };
}

/** A command's refusal of the address or of the plan's limit, by its field; undefined for any other error. */
function endpointRefusal(error: unknown): Errors | undefined {
  if (error instanceof WebhookUrlRefusedError) return { url: error.message };
  if (error instanceof WebhookLimitError)
    return { form: `${error.message} in ${error.sandbox ? 'test' : 'live'} mode: delete one first, or change plan.` };
  return undefined;
}

function formPage(view: MemberView, title: string, form: Html): string {
  return page(view.frame(title, 'Webhooks'), form);
}

/** The step before disabling or deleting an endpoint: what it does, the button, and the way back. */
function confirmEndpointAction(
  view: MemberView,
  row: EndpointRow,
  what: { title: string; text: string; button: string; action: string },
) {
  return confirmPage(view, {
    title: what.title,
    current: 'Webhooks',
    consequence: what.text,
    action: `${baseOf(view)}/${row.id}/${what.action}`,
    button: what.button,
    back: `${baseOf(view)}/${row.id}`,
  });
}

const backTo = (reply: FastifyReply, path: string, done: string, n?: number) =>
  reply.redirect(`${path}?done=${done}${n !== undefined ? `&n=${n}` : ''}`, 303);

function registerListAndCreate(app: TypedApp, services: AppServices): void {
  app.get(
    '/w/:slug/webhooks',
    {
      schema: { params: SlugParams, querystring: LogQuerySchema },
      config: { console: { operation: 'webhooks.view' } },
    },
    async (request, reply) => sendPage(reply, await endpointsPage(services, viewOf(request), outcomeOf(request.query))),
  );

  app.get(
    '/w/:slug/webhooks/new',
    { schema: { params: SlugParams }, config: { console: { operation: 'webhooks.manage' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const form = endpointForm(view, {
        action: baseOf(view),
        submit: 'Add the endpoint',
        values: {},
        errors: {},
        withMode: true,
      });
      return sendPage(reply, formPage(view, 'Add an endpoint', form));
    },
  );

  app.post(
    '/w/:slug/webhooks',
    { schema: { params: SlugParams, body: EndpointForm }, config: { console: { operation: 'webhooks.manage' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const refuse = (errors: Errors) =>
        sendPage(
          reply,
          formPage(
            view,
            'Add an endpoint',
            endpointForm(view, {
              action: baseOf(view),
              submit: 'Add the endpoint',
              values: request.body,
              errors,
              withMode: true,
            }),
          ),
          400,
        );
      const input = endpointInput(request.body);
      if ('errors' in input) return refuse(input.errors);
      const sandbox = request.body.mode === 'test';
      const context = staffContext(view.workspace.id, sandbox, actorOf(view), services.now());
      let created;
      try {
        created = await createEndpoint(services, context, view.workspace, input);
      } catch (error) {
        const refused = endpointRefusal(error);
        if (refused) return refuse(refused);
        throw error;
      }
      const shown = await keepOneTimeSecret(
        services.pool,
        view.signedIn,
        {
          title: 'Your new endpoint’s signing secret',
          lead: `The endpoint for ${created.endpoint.url} is created. Its signing secret verifies what it receives.`,
          value: created.secret,
          back: { href: `${baseOf(view)}/${created.endpoint.id}`, label: 'Go to the endpoint' },
        },
        services.now(),
      );
      return reply.redirect(shown, 303);
    },
  );
}

function registerEndpointPage(app: TypedApp, services: AppServices): void {
  app.get(
    '/w/:slug/webhooks/:id',
    {
      schema: { params: EndpointParams, querystring: LogQuerySchema },
      config: { console: { operation: 'webhooks.view' } },
    },
    async (request, reply) => {
      const view = viewOf(request);
      const row = await findEndpoint(services.pool, view.workspace.id, request.params.id);
      if (row) {
        const message = outcomeOf(request.query);
        const shown = await endpointPage(services, view, row, request.query as Query, message ? { message } : {});
        return sendPage(reply, shown.body, shown.status);
      }
      const deleted = await findDeletedEndpoint(services.pool, view.workspace.id, request.params.id, services.now());
      if (!deleted) throw new ConsoleRefusal(404, 'No such webhook endpoint in this workspace.');
      const shown = await deletedEndpointPage(services, view, deleted, request.query as Query);
      return sendPage(reply, shown.body, shown.status);
    },
  );
}

function registerChange(app: TypedApp, services: AppServices): void {
  const formFor = (view: MemberView, row: EndpointRow, values: EndpointFormBody, errors: Errors) =>
    formPage(
      view,
      `Change the endpoint ${row.url}`,
      endpointForm(view, {
        action: `${baseOf(view)}/${row.id}/edit`,
        submit: 'Save the changes',
        values,
        errors,
        withMode: false,
      }),
    );

  app.get(
    '/w/:slug/webhooks/:id/edit',
    { schema: { params: EndpointParams }, config: { console: { operation: 'webhooks.manage' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const { row } = await endpointOf(services, view, request.params.id);
      const values = {
        url: row.url,
        description: row.description ?? '',
        events: [...row.events],
        rate_limit_per_second: row.rate_limit_per_second === null ? '' : String(row.rate_limit_per_second),
      };
      return sendPage(reply, formFor(view, row, values, {}));
    },
  );

  app.post(
    '/w/:slug/webhooks/:id/edit',
    { schema: { params: EndpointParams, body: EndpointForm }, config: { console: { operation: 'webhooks.manage' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const { row, context } = await endpointOf(services, view, request.params.id);
      const input = endpointInput(request.body);
      if ('errors' in input) return sendPage(reply, formFor(view, row, request.body, input.errors), 400);
      try {
        await changeEndpoint(services, context, row.id, input);
      } catch (error) {
        const refused = endpointRefusal(error);
        if (refused) return sendPage(reply, formFor(view, row, request.body, refused), 400);
        throw error;
      }
      return backTo(reply, `${baseOf(view)}/${row.id}`, 'changed');
    },
  );
}

function registerVersionChange(app: TypedApp, services: AppServices): void {
  app.post(
    '/w/:slug/webhooks/:id/payload-version',
    { schema: { params: EndpointParams, body: VersionForm }, config: { console: { operation: 'webhooks.manage' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const { row, context } = await endpointOf(services, view, request.params.id);
      const version = request.body.payload_version;
      if (!isPayloadVersion(version)) {
        const shown = await endpointPage(
          services,
          view,
          row,
          {},
          { errors: { payload_version: 'Choose one of the versions.' } },
        );
        return sendPage(reply, shown.body, 400);
      }
      await changeEndpointVersion(services, context, row.id, version);
      return backTo(reply, `${baseOf(view)}/${row.id}`, 'version');
    },
  );
}

function registerRateChange(app: TypedApp, services: AppServices): void {
  app.post(
    '/w/:slug/webhooks/:id/rate-limit',
    { schema: { params: EndpointParams, body: RateForm }, config: { console: { operation: 'webhooks.manage' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const { row, context } = await endpointOf(services, view, request.params.id);
      const rate = rateOf(request.body.rate_limit_per_second);
      if (typeof rate === 'string') {
        const shown = await endpointPage(services, view, row, {}, { errors: { rate_limit_per_second: rate } });
        return sendPage(reply, shown.body, 400);
      }
      await updateEndpointSettings(services, context, row.id, { rate_limit_per_second: rate });
      return backTo(reply, `${baseOf(view)}/${row.id}`, 'rate');
    },
  );
}

function registerDisableAndDelete(app: TypedApp, services: AppServices): void {
  const route = { schema: { params: EndpointParams }, config: { console: { operation: 'webhooks.manage' as const } } };
  const post = { schema: { params: EndpointParams, body: CsrfOnly }, config: route.config };

  app.get('/w/:slug/webhooks/:id/disable', route, async (request, reply) => {
    const view = viewOf(request);
    const { row } = await endpointOf(services, view, request.params.id);
    const text = `Disable the endpoint ${row.url}? Nothing is sent to it until it is resumed; what comes for it meanwhile waits and is sent then.`;
    return sendPage(
      reply,
      confirmEndpointAction(view, row, {
        title: 'Disable an endpoint',
        text,
        button: 'Disable the endpoint',
        action: 'disable',
      }),
    );
  });

  app.post('/w/:slug/webhooks/:id/disable', post, async (request, reply) => {
    const view = viewOf(request);
    const { row, context } = await endpointOf(services, view, request.params.id);
    await disableEndpoint(services, context, row.id, view.member.name);
    return backTo(reply, `${baseOf(view)}/${row.id}`, 'disabled');
  });

  app.get('/w/:slug/webhooks/:id/delete', route, async (request, reply) => {
    const view = viewOf(request);
    const { row } = await endpointOf(services, view, request.params.id);
    const text = `Delete the endpoint ${row.url}? Nothing is sent to it again and what waits for it is cancelled; this cannot be undone. Its delivery log stays readable for 30 days.`;
    return sendPage(
      reply,
      confirmEndpointAction(view, row, {
        title: 'Delete an endpoint',
        text,
        button: 'Delete the endpoint',
        action: 'delete',
      }),
    );
  });

  app.post('/w/:slug/webhooks/:id/delete', post, async (request, reply) => {
    const view = viewOf(request);
    const { row, context } = await endpointOf(services, view, request.params.id);
    await deleteEndpoint(services, context, row.id);
    return backTo(reply, baseOf(view), 'deleted');
  });
}

function registerEndpointActions(app: TypedApp, services: AppServices): void {
  const post = (operation: 'webhooks.resume' | 'webhooks.test') => ({
    schema: { params: EndpointParams, body: CsrfOnly },
    config: { console: { operation } },
  });

  app.post('/w/:slug/webhooks/:id/resume', post('webhooks.resume'), async (request, reply) => {
    const view = viewOf(request);
    const { row, context } = await endpointOf(services, view, request.params.id);
    await resumeEndpoint(services, context, row.id);
    return backTo(reply, `${baseOf(view)}/${row.id}`, 'resumed');
  });

  app.post('/w/:slug/webhooks/:id/test', post('webhooks.test'), async (request, reply) => {
    const view = viewOf(request);
    const { row, context } = await endpointOf(services, view, request.params.id);
    await sendTestEvent(services, context, row.id);
    return backTo(reply, `${baseOf(view)}/${row.id}`, 'test');
  });

  app.post(
    '/w/:slug/webhooks/:id/rotate-secret',
    {
      schema: { params: EndpointParams, body: RotateForm },
      config: { console: { operation: 'webhooks.rotate_secret' } },
    },
    async (request, reply) => {
      const view = viewOf(request);
      const { row, context } = await endpointOf(services, view, request.params.id);
      try {
        await allowRecent(services, view, 'webhooks.rotate_secret', { password: request.body.password });
      } catch (error) {
        if (error instanceof ConsoleRefusal && error.field)
          return sendPage(
            reply,
            (await endpointPage(services, view, row, {}, { errors: { [error.field]: error.message } })).body,
            error.status,
          );
        throw error;
      }
      const rotated = await rotateEndpointSecret(services, context, row.id);
      const shown = await keepOneTimeSecret(
        services.pool,
        view.signedIn,
        {
          title: 'The endpoint’s new signing secret',
          lead: `The secret of ${row.url} is rotated; the previous one keeps signing beside it for 24 hours.`,
          value: rotated.secret,
          back: { href: `${baseOf(view)}/${row.id}`, label: 'Back to the endpoint' },
        },
        services.now(),
      );
      return reply.redirect(shown, 303);
    },
  );
}

function registerDeliveryActions(app: TypedApp, services: AppServices): void {
  // The log's row links here (it sits in the list's selection form, where a form of its own cannot): the confirmation.
  app.get(
    '/w/:slug/webhooks/:id/deliveries/:deliveryId/resend',
    { schema: { params: DeliveryParams }, config: { console: { operation: 'webhooks.resend' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const { row } = await endpointOf(services, view, request.params.id);
      const delivery = await findDelivery(services.pool, row.id, request.params.deliveryId);
      if (!delivery) throw new ConsoleRefusal(404, 'No such delivery of this endpoint.');
      const back = `${baseOf(view)}/${row.id}`;
      return sendPage(
        reply,
        confirmPage(view, {
          title: 'Resend a delivery',
          current: 'Webhooks',
          consequence: html`Send the ${eventKindName(delivery.event_type)} delivery of
          ${when(delivery.created_at, timeZoneOf(view.workspace))} to ${row.url} again, with the same event id and body?
          The receiver gets it once more; this cannot be called back.`,
          action: `${back}/deliveries/${delivery.id}/resend`,
          button: 'Resend this delivery',
          back,
        }),
      );
    },
  );

  app.post(
    '/w/:slug/webhooks/:id/deliveries/:deliveryId/resend',
    { schema: { params: DeliveryParams, body: CsrfOnly }, config: { console: { operation: 'webhooks.resend' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const { row } = await endpointOf(services, view, request.params.id);
      const resent = await resendDelivery(services.pool, row.id, request.params.deliveryId, services.now());
      if (!resent) throw new ConsoleRefusal(404, 'No such delivery of this endpoint.');
      return backTo(reply, `${baseOf(view)}/${row.id}`, 'resent');
    },
  );

  app.get(
    '/w/:slug/webhooks/:id/retry-failed',
    {
      schema: { params: EndpointParams, querystring: SinceQuery },
      config: { console: { operation: 'webhooks.replay' } },
    },
    async (request, reply) => {
      const view = viewOf(request);
      const { row, context } = await endpointOf(services, view, request.params.id);
      const since = momentOf(request.query.since ?? '', timeZoneOf(view.workspace));
      if (!(since instanceof Date))
        return sendPage(reply, (await endpointPage(services, view, row, {}, { errors: { since } })).body, 400);
      let count: number;
      try {
        ({ count } = await previewReplay(services, context, row.id, retryFailedRequest(since)));
      } catch (error) {
        return retryRefused(services, view, row, reply, error);
      }
      return sendPage(
        reply,
        (await endpointPage(services, view, row, {}, { preview: { since: request.query.since!, count } })).body,
      );
    },
  );

  app.post(
    '/w/:slug/webhooks/:id/retry-failed',
    {
      schema: { params: EndpointParams, body: SinceForm },
      config: { console: { operation: 'webhooks.replay' } },
    },
    async (request, reply) => {
      const view = viewOf(request);
      const { row, context } = await endpointOf(services, view, request.params.id);
      const since = momentOf(request.body.since ?? '', timeZoneOf(view.workspace));
      if (!(since instanceof Date))
        return sendPage(reply, (await endpointPage(services, view, row, {}, { errors: { since } })).body, 400);
      let queued: number;
      try {
        ({ queued } = await replayEndpointEvents(services, context, row.id, retryFailedRequest(since), null));
      } catch (error) {
        return retryRefused(services, view, row, reply, error);
      }
      return backTo(reply, `${baseOf(view)}/${row.id}`, 'retried', queued);
    },
  );
}

/**
 * "Retry failed since" is the replay (POST /v1/webhooks/{id}/replay) of the events whose deliveries failed, from that
 * time to now: the same operation, its window and kinds checked the same way.
 */
const retryFailedRequest = (since: Date): ReplayRequest => ({ since: since.toISOString(), only_failed: true });

/** A replay's refusal (the window, the cap, the rate limit) next to the form's time. */
async function retryRefused(
  services: AppServices,
  view: MemberView,
  row: EndpointRow,
  reply: FastifyReply,
  error: unknown,
) {
  if (!isCommandError(error)) throw error;
  const { status, errors } = refusalErrors(error, { since: 'since', until: 'since' }, 'since', {
    since: 'the time',
  });
  return sendPage(reply, (await endpointPage(services, view, row, {}, { errors })).body, status);
}

/** The webhook pages: the endpoints, each endpoint's state and log, and what staff do with them. */
export function registerWebhookPages(app: TypedApp, services: AppServices): void {
  registerListAndCreate(app, services);
  registerRecordListExport(app, services, {
    path: 'webhooks/:id',
    params: EndpointParams,
    filterNames: DELIVERY_LOG_FILTERS,
    specOf: async (view, params) => deliveryLogList(await logEndpointOf(services, view, params.id)),
  });
  registerEndpointPage(app, services);
  registerChange(app, services);
  registerVersionChange(app, services);
  registerRateChange(app, services);
  registerDisableAndDelete(app, services);
  registerEndpointActions(app, services);
  registerDeliveryActions(app, services);
}
