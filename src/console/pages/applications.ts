import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import { applicationView } from '../../commands/applications/application-view.js';
import { handleApplicationCommand } from '../../commands/applications/application-commands.js';
import { isCommandError } from '../../commands/errors.js';
import { readApplicationAsOf, readHistoryPage, readLeadAsOf } from '../../commands/history/history.js';
import {
  APPLICATION_STATUSES,
  OUTCOMES,
  type ApplicationCommand,
  type ApplicationStatusValue,
  type Outcome,
} from '../../domain/applications/types.js';
import type { Lead } from '../../domain/leads/lead.js';
import type { TypedApp } from '../../http/typed-app.js';
import { can } from '../../identity/permissions.js';
import { findApplication } from '../../projections/applications.js';
import { findLead } from '../../projections/leads-queries.js';
import type { AdminApplication } from '../../schemas/application.js';
import { ConsoleRefusal, sendPage, type MemberView } from '../context.js';
import { html, type Html, table } from '../html.js';
import { choice, csrfField, field, filters, notice, page } from '../layout.js';
import { renderList } from '../list/component.js';
import { APPLICATION_FILTERS, APPLICATIONS } from '../list/lists/applications.js';
import { countryName } from '../list/lists/shared.js';
import { listQuerySchema, registerListExport } from '../list/routes.js';
import { actorOf, contextOf, refusalErrors, textArea } from '../forms.js';
import { viewOf } from '../routes.js';
import { boardLinkOf } from '../board/filter.js';
import { confirmPage } from './confirm.js';
import { Done, FormBody, RecordParams, Slug, Text, Uuid, WorkspaceParams } from './record-schemas.js';
import { momentOf, preciseInputValue, timeZoneOf, when } from '../time.js';
import { timeline } from '../timeline.js';

const MODULE_KEY = /^[a-z][a-z0-9_]{0,59}$/;
const base = (view: MemberView) => `/console/w/${view.workspace.slug}/applications`;

const MESSAGES: Record<string, string> = {
  converted: 'The lead was converted: this is its application.',
  changed: 'The application was changed.',
  moved: 'The case moved to its new stage.',
  status: 'The status was set.',
  outcome: 'The outcome was recorded.',
  module: 'The module was changed.',
  noted: 'The note was added to the timeline.',
};

/** A status, outcome or module state in words ("on hold", not on_hold). */
const words = (value: string | null | undefined) => (value ? value.replaceAll('_', ' ') : '—');

type Query = Record<string, string | undefined>;

/** The countries of the workspace's cases (few: one query over its applications), by name. */
async function countriesOfCases(services: AppServices, view: MemberView): Promise<[string, string][]> {
  const result = await services.pool.query<{ code: string }>(
    `SELECT DISTINCT l.body->>'country_interest' AS code
       FROM applications a JOIN leads l ON l.id = a.lead_id AND l.tenant_id = a.tenant_id
      WHERE a.tenant_id = $1 AND a.sandbox = false AND l.body->>'country_interest' IS NOT NULL`,
    [view.workspace.id],
  );
  return result.rows
    .map((r): [string, string] => [r.code, countryName(r.code)])
    .sort((a, b) => a[1].localeCompare(b[1]));
}

/** The filters: a search by case or name, then status, outcome, stage, module, owner and country (folded until set). */
async function filterForm(services: AppServices, view: MemberView, query: Query, errors: Record<string, string>) {
  const flow = view.workspace.settings.application_workflow;
  const set = APPLICATION_FILTERS.filter((n) => n !== 'q' && query[n]).length;
  const pick = (name: string, label: string, options: readonly (readonly [string, string])[], empty: string) =>
    choice({ name, label, options, value: query[name], empty, error: errors[name] });
  return filters({
    action: base(view),
    label: 'Find applications',
    active: set,
    main: field({
      name: 'q',
      label: 'Search',
      type: 'search',
      value: query.q ?? '',
      hint: 'Part of a case number or a name, three characters or more.',
      error: errors.q,
    }),
    more: html`${pick(
      'status',
      'Status',
      APPLICATION_STATUSES.map((x) => [x, words(x)]),
      'Any status',
    )}
    ${pick(
      'outcome',
      'Outcome',
      OUTCOMES.map((x) => [x, words(x)]),
      'Any outcome',
    )}
    ${pick(
      'stage',
      'Stage',
      flow.stages.map((x) => [x.key, x.name]),
      'Any stage',
    )}
    ${pick(
      'module',
      'Current module',
      flow.modules.map((x) => [x.key, x.name]),
      'Any module',
    )}
    ${pick('owner', 'Owner', [['none', 'No owner'], ...view.workspace.settings.users.map((u) => [u.id, u.name] as const)], 'Anyone')}
    ${pick('country', 'Country', await countriesOfCases(services, view), 'Any country')}`,
  });
}

async function listPage(services: AppServices, view: MemberView, query: Query) {
  const list = await renderList(services, view, APPLICATIONS, query);
  const body = html`${boardLinkOf(base(view), query, 'applications')}
  ${await filterForm(services, view, query, list.errors)} ${list.body}`;
  return { status: list.status, body: page(view.frame('Applications', 'Applications'), body) };
}

function stagesOf(app: AdminApplication): Html {
  return html`<ol class="stages">
    ${app.stages.map(
      (s) =>
        html`<li ${s.key === app.stage.key ? html`aria-current="step"` : ''}>
          ${s.name}${s.key === app.stage.key ? html` <strong>(current)</strong>` : ''}
        </li>`,
    )}
  </ol>`;
}

function summaryOf(app: AdminApplication, zone: string): Html {
  return html`<dl class="facts">
    <dt>Case</dt>
    <dd>${app.case_ref}</dd>
    <dt>Stage</dt>
    <dd>${app.stage.name}</dd>
    <dt>Progress</dt>
    <dd>${app.progress}%</dd>
    <dt>Status</dt>
    <dd>${words(app.status)}</dd>
    <dt>Outcome</dt>
    <dd>${words(app.outcome)}</dd>
    <dt>Current module</dt>
    <dd>${app.current_module?.name ?? '—'}</dd>
    <dt>Opened</dt>
    <dd>${when(app.opened_at, zone)}</dd>
  </dl>`;
}

function modulesTable(view: MemberView, app: AdminApplication, editable: boolean): Html {
  const csrf = csrfField(view.signedIn.csrf);
  const action = (m: AdminApplication['roadmap'][number], to: string, label: string) =>
    html`<form method="post" action="${base(view)}/${app.id}/modules/${m.key}/${to}" class="inline">
      ${csrf}<button type="submit">${label}<span class="visually-hidden"> ${m.name}</span></button>
    </form>`;
  return table({
    caption: 'Modules',
    headings: ['Module', 'Stages', 'State', 'Switched', editable && 'Work on it'],
    rows: app.roadmap.map(
      (m) =>
        html`<tr>
          <td>${m.name}${m.optional ? ' (optional)' : ''}</td>
          <td>${m.stages.join(', ')}</td>
          <td>${words(m.state)}</td>
          <td>${m.selected ? 'on' : 'off'}</td>
          ${
            editable
              ? html`<td>
                  ${m.selected ? action(m, m.state === 'pending' ? 'updated' : 'pending', m.state === 'pending' ? 'Mark updated' : 'Mark pending') : ''}
                  ${m.optional ? action(m, m.selected ? 'deselect' : 'select', m.selected ? 'Switch off' : 'Switch on') : ''}
                  ${!m.selected && !m.optional && !m.custom ? action(m, 'restore', 'Restore as the roadmap has it') : ''}
                </td>`
              : ''
          }
        </tr>`,
    ),
  });
}

function leadThen(lead: Lead, zone: string): Html {
  return html`<dl class="facts">
    <dt>Name</dt>
    <dd>${lead.full_name || '(erased)'}</dd>
    <dt>Stage</dt>
    <dd>${lead.stage.name}</dd>
    <dt>Owner</dt>
    <dd>${lead.owner?.name ?? '—'}</dd>
    <dt>Converted</dt>
    <dd>${lead.converted ? 'yes' : 'no'}</dd>
    <dt>Last changed</dt>
    <dd>${when(lead.updated_at, zone)}</dd>
  </dl>`;
}

interface State {
  errors?: Record<string, string>;
  message?: string;
  asOf?: string;
}

async function applicationPage(services: AppServices, view: MemberView, id: string, o: State = {}): Promise<string> {
  const row = await findApplication(services.pool, view.workspace.id, false, id);
  if (!row) throw new ConsoleRefusal(404, 'There is no such application in this workspace.');
  const now = applicationView(row.state, false);
  const errors = o.errors ?? {};
  const scope = { tenantId: view.workspace.id, sandbox: false };
  const editable = can(view.role, 'applications.change');
  const csrf = csrfField(view.signedIn.csrf);
  const lead = await findLead(services.pool, view.workspace.id, false, now.lead_id);

  const asOf = o.asOf ? await replayAsOf(services, scope, id, now.lead_id, o.asOf, errors, view) : '';

  const history = await readHistoryPage(services, scope, 'application', id, { limit: 10_000 });
  const statusForms = editable ? workSection(view, now, id, errors, csrf) : '';
  return page(
    view.frame(`Application ${now.case_ref}`, 'Applications'),
    html`${notice(o.message)}
      <p>
        Lead:
        <a href="/console/w/${view.workspace.slug}/leads/${now.lead_id}">${lead?.full_name || '(erased)'}</a>
      </p>
      <p>
        <a href="/console/w/${view.workspace.slug}/tasks?application=${id}">Tasks of this application</a> ·
        <a href="/console/w/${view.workspace.slug}/invoices?application=${id}">Invoices of this application</a> ·
        <a href="/console/w/${view.workspace.slug}/documents?application=${id}">Documents of this application</a>
      </p>
      ${summaryOf(now, timeZoneOf(view.workspace))}
      <h2>Stages</h2>
      ${stagesOf(now)} ${errors.module ? notice(errors.module, 'alert') : ''} ${modulesTable(view, now, editable)}
      ${statusForms} ${editable ? noteSection(view, id, errors, csrf) : ''}
      ${asOfSection(view, id, o.asOf, errors, asOf)}
      <section aria-labelledby="timeline">
        <h2 id="timeline">Timeline, newest first</h2>
        ${timeline(history.data, timeZoneOf(view.workspace), `${base(view)}/${id}`)}
      </section>`,
  );
}

type ApplicationNow = ReturnType<typeof applicationView>;

/** The case and its lead as they were at a past moment; a moment that cannot be shown is an error on the form. */
async function replayAsOf(
  services: AppServices,
  scope: { tenantId: string; sandbox: boolean },
  id: string,
  leadId: string,
  asOfText: string,
  errors: Record<string, string>,
  view: MemberView,
): Promise<Html | string> {
  const at = momentOf(asOfText, timeZoneOf(view.workspace));
  if (typeof at === 'string') {
    errors.as_of = at;
    return '';
  }
  if (at.getTime() > services.now().getTime()) {
    errors.as_of = 'Pick a moment in the past: later events may still come.';
    return '';
  }
  const appThen = await readApplicationAsOf(services, scope, id, at).catch((e: unknown) => {
    if (isCommandError(e) && e.refusal === 'not_found') return undefined;
    throw e;
  });
  const leadThenFound = await readLeadAsOf(services, scope, leadId, at).catch((e: unknown) => {
    if (isCommandError(e) && e.refusal === 'not_found') return undefined;
    throw e;
  });
  return html`<section aria-labelledby="then" class="as-of">
    <h2 id="then">As it was at ${when(at, timeZoneOf(view.workspace))}</h2>
    ${
      appThen
        ? html`${summaryOf(appThen.application, timeZoneOf(view.workspace))}${stagesOf(appThen.application)}${modulesTable(view, appThen.application, false)}`
        : html`<p>The application did not exist yet at that moment.</p>`
    }
    <h3>Its lead then</h3>
    ${leadThenFound ? leadThen(leadThenFound.lead, timeZoneOf(view.workspace)) : html`<p>The lead did not exist yet at that moment.</p>`}
  </section>`;
}

function workSection(
  view: MemberView,
  now: ApplicationNow,
  id: string,
  errors: Record<string, string>,
  csrf: ReturnType<typeof csrfField>,
) {
  return html`<section aria-labelledby="work">
    <h2 id="work">Work on the case</h2>
    ${errors.form ? notice(errors.form, 'alert') : ''}
    <form method="post" action="${base(view)}/${id}/stage">
      ${csrf}
      ${choice({ name: 'stage', label: 'Move to stage', options: now.stages.map((s) => [s.key, s.name]), value: now.stage.key, error: errors.stage })}
      <button type="submit">Move</button>
    </form>
    <form method="post" action="${base(view)}/${id}/status">
      ${csrf}
      ${choice({ name: 'status', label: 'Status', options: APPLICATION_STATUSES.map((s) => [s, words(s)]), value: now.status, error: errors.status })}
      <button type="submit">Set the status</button>
    </form>
    <form method="get" action="${base(view)}/${id}/outcome">
      ${choice({ name: 'outcome', label: 'Outcome', options: OUTCOMES.map((s) => [s, words(s)]), value: now.outcome ?? undefined, error: errors.outcome })}
      <button type="submit">Record the outcome…</button>
    </form>
  </section>`;
}

/** A note on the case: taken whatever its status, closed included (it changes nothing on the case). */
function noteSection(view: MemberView, id: string, errors: Record<string, string>, csrf: ReturnType<typeof csrfField>) {
  return html`<section aria-labelledby="notes">
    <h2 id="notes">Add a note</h2>
    <p class="hint">Notes go on the timeline below; they can be added to a closed case too.</p>
    <form method="post" action="${base(view)}/${id}/notes">
      ${csrf} ${textArea({ name: 'note', label: 'Note', error: errors.note })}
      <button type="submit">Add the note</button>
    </form>
  </section>`;
}

function asOfSection(
  view: MemberView,
  id: string,
  asOfText: string | undefined,
  errors: Record<string, string>,
  asOf: Html | string,
) {
  return html`<section aria-labelledby="asof">
    <h2 id="asof">As of a past moment</h2>
    <form method="get" action="${base(view)}/${id}">
      <div class="field${errors.as_of ? ' invalid' : ''}">
        <label for="f-as_of">Moment (${timeZoneOf(view.workspace)})</label>
        <p class="hint" id="f-as_of-hint">The application and its lead as they were then, replayed from the log.</p>
        <input
          id="f-as_of"
          name="as_of"
          type="datetime-local"
          step="0.001"
          value="${preciseInputValue(asOfText, timeZoneOf(view.workspace))}"
          aria-describedby="f-as_of-hint${errors.as_of ? ' f-as_of-error' : ''}"
          ${errors.as_of ? html`aria-invalid="true"` : ''}
        />
        ${errors.as_of ? html`<p class="error" id="f-as_of-error">${errors.as_of}</p>` : ''}
      </div>
      <button type="submit">Show it as it was</button>
    </form>
    ${asOf}
  </section>`;
}

/** The page that asks before an outcome is recorded: the client's case is decided by it, and it is announced. */
function outcomeConfirmation(view: MemberView, app: ApplicationNow, id: string, outcome: Outcome, error?: string) {
  return confirmPage(view, {
    title: `Record the outcome of ${app.case_ref}`,
    current: 'Applications',
    consequence: `The outcome of ${app.case_ref} will be recorded as ${words(outcome)}${
      app.outcome ? ` (it is ${words(app.outcome)} now)` : ''
    }. It goes into the case’s history for good and is sent to the workspace’s webhooks; changing it later records a
      second outcome beside this one.`,
    action: `${base(view)}/${id}/outcome`,
    fields: { outcome },
    button: `Record ${words(outcome)}`,
    back: `${base(view)}/${id}`,
    error,
  });
}

const isOutcome = (value: string | undefined): value is Outcome =>
  (OUTCOMES as readonly string[]).includes(value ?? '');
const isStatus = (value: string | undefined): value is ApplicationStatusValue =>
  (APPLICATION_STATUSES as readonly string[]).includes(value ?? '');

const ModuleParams = Type.Object({ slug: Slug, id: Uuid, module: Text(60), action: Text(20) });
const changing = { console: { operation: 'applications.change' } } as const;

export function registerApplicationPages(app: TypedApp, services: AppServices): void {
  registerListExport(app, services, APPLICATIONS);
  app.get(
    '/w/:slug/applications',
    {
      schema: { params: WorkspaceParams, querystring: listQuerySchema(APPLICATIONS) },
      config: { console: { operation: 'applications.view' } },
    },
    async (request, reply) => {
      const answer = await listPage(services, viewOf(request), request.query as Query);
      return sendPage(reply, answer.body, answer.status);
    },
  );

  app.get(
    '/w/:slug/applications/:id',
    {
      schema: { params: RecordParams, querystring: Type.Object({ done: Done, as_of: Type.Optional(Text(40)) }) },
      config: { console: { operation: 'applications.view' } },
    },
    async (request, reply) => {
      const query = request.query;
      const body = await applicationPage(services, viewOf(request), request.params.id, {
        message: MESSAGES[query.done ?? ''],
        asOf: query.as_of || undefined,
      });
      return sendPage(reply, body, body.includes('id="f-as_of-error"') ? 400 : 200);
    },
  );

  /** Runs one command on the case, then back to its page saying so; a refusal is shown by the form it came from. */
  async function operate(
    view: MemberView,
    id: string,
    field: string,
    done: string,
    wanted: ApplicationCommand | string,
  ) {
    if (!(await findApplication(services.pool, view.workspace.id, false, id)))
      throw new ConsoleRefusal(404, 'There is no such application in this workspace.');
    const refuse = async (status: number, errors: Record<string, string>) =>
      ({ status, body: await applicationPage(services, view, id, { errors }) }) as const;
    if (typeof wanted === 'string') return refuse(400, { [field]: wanted });
    try {
      await handleApplicationCommand(services.store, contextOf(view)(services.now()), id, () => wanted);
    } catch (error) {
      if (!isCommandError(error)) throw error;
      const refused = refusalErrors(error, {}, field);
      return refuse(refused.status, refused.errors);
    }
    return { status: 303, body: `${base(view)}/${id}?done=${done}` } as const;
  }
  const answer = (reply: FastifyReply, result: { status: number; body: string }) =>
    result.status === 303 ? reply.redirect(result.body, 303) : sendPage(reply, result.body, result.status);

  app.post(
    '/w/:slug/applications/:id/stage',
    { schema: { params: RecordParams, body: FormBody({ stage: Type.Optional(Text(100)) }) }, config: changing },
    async (request, reply) => {
      const stage = request.body.stage;
      const wanted = stage ? { type: 'move_to_stage' as const, stage } : 'Choose a stage.';
      return answer(reply, await operate(viewOf(request), request.params.id, 'stage', 'moved', wanted));
    },
  );
  app.post(
    '/w/:slug/applications/:id/status',
    { schema: { params: RecordParams, body: FormBody({ status: Type.Optional(Text(20)) }) }, config: changing },
    async (request, reply) => {
      const status = request.body.status;
      const wanted = isStatus(status) ? { type: 'set_status' as const, status } : 'Choose a status.';
      return answer(reply, await operate(viewOf(request), request.params.id, 'status', 'status', wanted));
    },
  );

  app.post(
    '/w/:slug/applications/:id/notes',
    { schema: { params: RecordParams, body: FormBody({ note: Type.Optional(Text(10_000)) }) }, config: changing },
    async (request, reply) => {
      const view = viewOf(request);
      const note = (request.body.note ?? '').trim();
      const wanted =
        note === ''
          ? 'Write the note first.'
          : note.length > 5000
            ? 'Write at most 5,000 characters.'
            : { type: 'add_note' as const, note, author: actorOf(view), at: services.now().toISOString() };
      return answer(reply, await operate(view, request.params.id, 'note', 'noted', wanted));
    },
  );

  app.get(
    '/w/:slug/applications/:id/outcome',
    {
      schema: { params: RecordParams, querystring: Type.Object({ outcome: Type.Optional(Text(20)) }) },
      config: changing,
    },
    async (request, reply) => {
      const view = viewOf(request);
      const id = request.params.id;
      const row = await findApplication(services.pool, view.workspace.id, false, id);
      if (!row) throw new ConsoleRefusal(404, 'There is no such application in this workspace.');
      const outcome = request.query.outcome;
      if (!isOutcome(outcome))
        return sendPage(
          reply,
          await applicationPage(services, view, id, { errors: { outcome: 'Choose an outcome.' } }),
          400,
        );
      return sendPage(reply, outcomeConfirmation(view, applicationView(row.state, false), id, outcome));
    },
  );
  app.post(
    '/w/:slug/applications/:id/outcome',
    {
      schema: {
        params: RecordParams,
        body: FormBody({ outcome: Type.Optional(Text(20)), confirm: Type.Optional(Text(10)) }),
      },
      config: changing,
    },
    async (request, reply) => {
      const view = viewOf(request);
      const id = request.params.id;
      const { outcome, confirm } = request.body;
      if (!isOutcome(outcome))
        return answer(reply, await operate(view, id, 'outcome', 'outcome', 'Choose an outcome.'));
      if (confirm !== 'yes') {
        const row = await findApplication(services.pool, view.workspace.id, false, id);
        if (!row) throw new ConsoleRefusal(404, 'There is no such application in this workspace.');
        const again = 'Nothing was recorded yet: confirm the outcome below.';
        return sendPage(reply, outcomeConfirmation(view, applicationView(row.state, false), id, outcome, again), 400);
      }
      return answer(reply, await operate(view, id, 'outcome', 'outcome', { type: 'record_outcome', outcome }));
    },
  );

  app.post(
    '/w/:slug/applications/:id/modules/:module/:action',
    { schema: { params: ModuleParams, body: FormBody({}) }, config: changing },
    async (request, reply) => {
      const { id, module, action } = request.params;
      return answer(reply, await operate(viewOf(request), id, 'module', 'module', moduleCommand(module, action)));
    },
  );
}

/** The module change a button asks for, or why there is none. */
function moduleCommand(module: string, action: string): ApplicationCommand | string {
  if (!MODULE_KEY.test(module)) return 'There is no such module.';
  switch (action) {
    case 'updated':
    case 'pending':
      return { type: 'set_module_state', module_key: module, state: action };
    case 'select':
      return { type: 'select_module', module_key: module };
    case 'deselect':
      return { type: 'deselect_module', module_key: module };
    case 'restore':
      return { type: 'restore_module', module_key: module };
    default:
      return 'There is no such change of a module.';
  }
}
