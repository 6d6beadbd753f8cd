import type { FastifyReply } from 'fastify';
import type { AppServices } from '../../bootstrap.js';
import { convertLeadToApplication } from '../../commands/applications/convert-lead.js';
import { isCommandError } from '../../commands/errors.js';
import { readHistoryPage } from '../../commands/history/history.js';
import { eraseLead } from '../../commands/leads/erase-lead.js';
import { updateLead } from '../../commands/leads/update-lead.js';
import type { LeadPatch } from '../../domain/leads/decide.js';
import type { Lead } from '../../domain/leads/lead.js';
import type { TypedApp } from '../../http/typed-app.js';
import { can } from '../../identity/permissions.js';
import { decodeCursor, encodeCursor, type ListPosition } from '../../leads/cursor.js';
import { findLead } from '../../projections/leads-queries.js';
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
import { html, type Html, table } from '../html.js';
import { choice, csrfField, field, filters, notice, page, resultCount } from '../layout.js';
import { applicationsOfLead, listConsoleLeads, type LeadFilter } from '../queries/leads.js';
import { contextOf, idParam, refusalErrors, textArea } from '../forms.js';
import { dayBound, inputValue, momentOf, timeZoneOf, when } from '../time.js';
import { timeline } from '../timeline.js';

const PAGE_SIZE = 50;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const leadsBase = (view: MemberView) => `/console/w/${view.workspace.slug}/leads`;

type Query = Record<string, string | undefined>;

function filterOf(query: Query, zone: string): { filter: LeadFilter; errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  const filter: LeadFilter = {};
  const q = (query.q ?? '').trim();
  if (q && q.length < 3) errors.q = 'Enter at least three characters of a name, phone or email.';
  else if (q.length > 100) errors.q = 'Enter at most 100 characters.';
  else if (q) filter.q = q;
  if (query.stage) filter.stage = query.stage;
  if (query.owner === 'none' || UUID.test(query.owner ?? '')) filter.ownerId = query.owner;
  if (UUID.test(query.branch ?? '')) filter.branchId = query.branch;
  if (query.visa_type) filter.visaType = query.visa_type;
  if (query.source) filter.source = query.source;
  for (const [name, key, end] of [
    ['created_from', 'createdFrom', false],
    ['created_to', 'createdTo', true],
    ['updated_from', 'updatedFrom', false],
    ['updated_to', 'updatedTo', true],
  ] as const) {
    const d = dayBound(query[name], zone, end);
    if (d === 'invalid') errors[name] = 'Enter a date as year-month-day.';
    else if (d) filter[key] = d;
  }
  return { filter, errors };
}

const FILTER_NAMES = [
  'q',
  'stage',
  'owner',
  'branch',
  'visa_type',
  'source',
  'created_from',
  'created_to',
  'updated_from',
  'updated_to',
];

/** The search form in one row: the text search, then the settings' choices and two date ranges (folded until used). */
function filterForm(view: MemberView, query: Query, errors: Record<string, string>): Html {
  const s = view.workspace.settings;
  const dateField = (name: string, label: string) =>
    field({ name, label, type: 'date', value: query[name] ?? '', error: errors[name] });
  const more = FILTER_NAMES.filter((n) => n !== 'q' && query[n]).length;
  return filters({
    action: leadsBase(view),
    label: 'Find leads',
    active: more + Object.keys(errors).filter((n) => n !== 'q' && n !== 'cursor').length,
    main: field({
      name: 'q',
      label: 'Search',
      type: 'search',
      value: query.q ?? '',
      hint: 'Any part of a name, phone or email, three characters or more.',
      error: errors.q,
    }),
    more: html`${choice({ name: 'stage', label: 'Stage', options: s.pipeline.stages.map((x) => [x.key, x.name]), value: query.stage, empty: 'Any stage' })}
      ${choice({
        name: 'owner',
        label: 'Owner',
        options: [['none', 'No owner'], ...s.users.map((u) => [u.id, u.name] as const)],
        value: query.owner,
        empty: 'Anyone',
      })}
      ${choice({ name: 'branch', label: 'Branch', options: s.branches.map((b) => [b.id, b.name]), value: query.branch, empty: 'Any branch' })}
      ${choice({ name: 'visa_type', label: 'Visa type', options: s.visa_types.map((v) => [v, v]), value: query.visa_type, empty: 'Any visa type' })}
      ${choice({ name: 'source', label: 'Source', options: s.sources.map((x) => [x.key, x.name]), value: query.source, empty: 'Any source' })}
      <fieldset>
        <legend>Created between</legend>
        ${dateField('created_from', 'From')} ${dateField('created_to', 'To (inclusive)')}
      </fieldset>
      <fieldset>
        <legend>Last changed between</legend>
        ${dateField('updated_from', 'From')} ${dateField('updated_to', 'To (inclusive)')}
      </fieldset>`,
  });
}

function leadsTable(view: MemberView, leads: Lead[], failed: boolean): Html {
  return table({
    caption: `Leads, most recently changed first${failed ? ' (correct the filters above)' : ''}`,
    headings: ['Name', 'Phone', 'Email', 'Stage', 'Owner', 'Branch', 'Changed'],
    rows: leads.map(
      (l) =>
        html`<tr>
          <td><a href="${leadsBase(view)}/${l.id}">${l.full_name || '(erased)'}</a></td>
          <td>${l.phone ?? '—'}</td>
          <td>${l.email ?? '—'}</td>
          <td>${l.stage.name}${l.converted ? ' (converted)' : ''}</td>
          <td>${l.owner?.name ?? '—'}</td>
          <td>${l.branch.code}</td>
          <td>${when(l.updated_at, timeZoneOf(view.workspace))}</td>
        </tr>`,
    ),
  });
}

/** The link to the next page: the same filters and the cursor after the last lead shown. */
function nextPageLink(services: AppServices, view: MemberView, query: Query, next: ListPosition | null): Html | '' {
  if (!next) return '';
  const kept = FILTER_NAMES.filter((n) => query[n]).map((n) => [n, query[n]!] as [string, string]);
  const cursor = encodeCursor(services.secretBox, view.workspace.id, false, next);
  const href = `${leadsBase(view)}?${new URLSearchParams([...kept, ['cursor', cursor]]).toString()}`;
  return html`<p><a href="${href}" rel="next">Next ${PAGE_SIZE} leads</a></p>`;
}

async function listPage(
  services: AppServices,
  view: MemberView,
  query: Query,
): Promise<{ status: number; body: string }> {
  allow(view, 'leads.view');
  const { filter, errors } = filterOf(query, timeZoneOf(view.workspace));
  const after = query.cursor ? decodeCursor(services.secretBox, view.workspace.id, false, query.cursor) : undefined;
  if (query.cursor && !after) errors.cursor = 'This page link is not valid any more; start from the first page.';
  const failed = Object.keys(errors).length > 0;
  const found = failed
    ? { leads: [], next: null }
    : await listConsoleLeads(services.pool, view.workspace.id, filter, { after, limit: PAGE_SIZE });
  const body = html`${filterForm(view, query, errors)} ${errors.cursor ? notice(errors.cursor, 'alert') : ''}
  ${failed ? '' : resultCount(found.leads.length, { one: 'lead', many: 'leads' }, found.next !== null)}
  ${leadsTable(view, found.leads, failed)} ${found.leads.length === 0 && !failed ? html`<p>No lead matches.</p>` : ''}
  ${nextPageLink(services, view, query, found.next)}`;
  return { status: failed ? 400 : 200, body: page(view.frame('Leads', 'Leads'), body) };
}

/** Refusals of the update command by the field of the form they concern. */
const FORM_FIELD: Record<string, string> = {
  stage_key: 'stage',
  lost_reason_key: 'lost_reason',
  owner_email: 'owner',
  next_follow_up_at: 'follow_up',
  note: 'note',
};

const MESSAGES: Record<string, string> = {
  changed: 'The lead was changed.',
  unchanged: 'Nothing was different, so nothing was changed.',
  erased: 'The person was erased: their personal data can no longer be read anywhere.',
};

interface LeadPageState {
  errors?: Record<string, string>;
  values?: Record<string, string | undefined>;
  message?: string;
}

function leadFacts(lead: Lead, zone: string): Html {
  const rows: [string, unknown][] = [
    ['Name', lead.full_name || '(erased)'],
    ['Phone', lead.phone],
    ['Email', lead.email],
    ['City', lead.city],
    ['Visa type', lead.visa_type],
    ['Country of interest', lead.country_interest],
    ['Source', lead.source.name],
    ['Branch', lead.branch.code],
    ['Owner', lead.owner ? `${lead.owner.name} (${lead.owner.email})` : null],
    ['Stage', lead.stage.name],
    ['Lost reason', lead.lost_reason?.name],
    ['Temperature', lead.temperature],
    ['Score', lead.score],
    ['Next follow-up', lead.next_follow_up_at ? when(lead.next_follow_up_at, zone) : null],
    ['Converted', lead.converted ? 'yes' : 'no'],
    ['Created', when(lead.created_at, zone)],
    ['Last changed', when(lead.updated_at, zone)],
  ];
  return html`<dl class="facts">
    ${rows.map(
      ([k, v]) =>
        html`<dt>${k}</dt>
          <dd>${v === null || v === undefined || v === '' ? '—' : v}</dd>`,
    )}
  </dl>`;
}

/** The form that changes the lead (stage, lost reason, owner, follow-up, a note), for members who may change it. */
function changeSection(view: MemberView, lead: Lead, o: LeadPageState): Html | '' {
  if (lead.converted) return html`<p>This lead was converted to an application, so it can no longer be changed.</p>`;
  if (!can(view.role, 'leads.change')) return '';
  const s = view.workspace.settings;
  const errors = o.errors ?? {};
  const v = o.values ?? {};
  return html`<section aria-labelledby="change">
    <h2 id="change">Change this lead</h2>
    <form method="post" action="${leadsBase(view)}/${lead.id}">
      ${csrfField(view.signedIn.csrf)}
      ${choice({ name: 'stage', label: 'Stage', options: s.pipeline.stages.map((x) => [x.key, x.name]), value: v.stage ?? lead.stage.key, error: errors.stage })}
      ${choice({
        name: 'lost_reason',
        label: 'Lost reason (when the stage is lost)',
        options: s.lost_reasons.map((x) => [x.key, x.name]),
        value: v.lost_reason ?? lead.lost_reason?.key,
        empty: 'None',
        error: errors.lost_reason,
      })}
      ${choice({
        name: 'owner',
        label: 'Owner',
        options: s.users.filter((u) => u.active).map((u) => [u.email, u.name]),
        value: v.owner ?? lead.owner?.email,
        empty: 'No owner',
        error: errors.owner,
      })}
      ${field({
        name: 'follow_up',
        label: `Next follow-up (${timeZoneOf(view.workspace)})`,
        type: 'datetime-local',
        value: v.follow_up ?? inputValue(lead.next_follow_up_at, timeZoneOf(view.workspace)),
        error: errors.follow_up,
      })}
      ${textArea({ name: 'note', label: 'Add a note', value: v.note, error: errors.note })}
      <button type="submit">Save the changes</button>
    </form>
  </section>`;
}

function convertSection(view: MemberView, lead: Lead, errors: Record<string, string>): Html | '' {
  if (!can(view.role, 'applications.convert') || lead.converted) return '';
  return html`<section aria-labelledby="convert">
    <h2 id="convert">Convert to an application</h2>
    ${errors.convert ? html`<p class="error" id="convert-error">${errors.convert}</p>` : ''}
    <form method="post" action="${leadsBase(view)}/${lead.id}/convert">
      ${csrfField(view.signedIn.csrf)}
      <button type="submit">Convert ${lead.full_name} to an application</button>
    </form>
  </section>`;
}

/** Erasing the person: what it does, a box to tick, and the password when the sign-in is not recent. */
function eraseSection(services: AppServices, view: MemberView, lead: Lead, errors: Record<string, string>): Html | '' {
  if (!can(view.role, 'leads.erase')) return '';
  return html`<section aria-labelledby="erase">
    <h2 id="erase">Erase this person</h2>
    <p>
      Erasing deletes the keys their personal data is sealed with, in this lead, its applications and their documents,
      tasks and invoices: name, phone, email and every other personal value can never be read again, here, in exports or
      in webhook deliveries. The records stay, without the person. This cannot be undone.
    </p>
    ${errors.erase_form ? notice(errors.erase_form, 'alert') : ''}
    <form method="post" action="${leadsBase(view)}/${lead.id}/erase">
      ${csrfField(view.signedIn.csrf)}
      <div class="field${errors.confirm ? ' invalid' : ''}">
        <input
          id="f-confirm"
          name="confirm"
          type="checkbox"
          value="yes"
          ${errors.confirm ? html`aria-invalid="true" aria-describedby="f-confirm-error"` : ''}
        />
        <label for="f-confirm" class="inline">I understand this person’s data will be gone for good</label>
        ${errors.confirm ? html`<p class="error" id="f-confirm-error">${errors.confirm}</p>` : ''}
      </div>
      ${
        needsPassword(services, view.signedIn, 'leads.erase') || errors.password
          ? field({
              name: 'password',
              label: 'Your password (erasing asks for a recent sign-in)',
              type: 'password',
              autocomplete: 'current-password',
              error: errors.password,
            })
          : ''
      }
      <button type="submit" class="danger">Erase this person</button>
    </form>
  </section>`;
}

/** Links to the lead's applications, tasks, invoices and documents. */
function recordLinks(view: MemberView, leadId: string, applications: { id: string; case_ref: string }[]): Html {
  const workspace = `/console/w/${view.workspace.slug}`;
  return html`${
      applications.length
        ? html`<p>
            Applications:
            ${applications.map((a) => html`<a href="${workspace}/applications/${a.id}">${a.case_ref}</a> `)}
          </p>`
        : ''
    }
    <p>
      <a href="${workspace}/tasks?lead=${leadId}">Tasks of this lead</a> ·
      <a href="${workspace}/invoices?lead=${leadId}">Invoices of this lead</a> ·
      <a href="${workspace}/documents?lead=${leadId}">Documents of this lead</a>
    </p>`;
}

async function leadPage(
  services: AppServices,
  view: MemberView,
  leadId: string,
  o: LeadPageState = {},
): Promise<string> {
  allow(view, 'leads.view');
  const lead = await findLead(services.pool, view.workspace.id, false, leadId);
  if (!lead) throw new ConsoleRefusal(404, 'There is no such lead in this workspace.');
  const history = await readHistoryPage(services, { tenantId: view.workspace.id, sandbox: false }, 'lead', leadId, {
    limit: 10_000,
  });
  const applications = await applicationsOfLead(services.pool, view.workspace.id, leadId);
  const errors = o.errors ?? {};
  return page(
    view.frame(lead.full_name || 'Erased person', 'Leads'),
    html`${notice(o.message)} ${errors.form ? notice(errors.form, 'alert') : ''}
      ${recordLinks(view, leadId, applications)} ${leadFacts(lead, timeZoneOf(view.workspace))}
      ${changeSection(view, lead, o)} ${convertSection(view, lead, errors)}
      <section aria-labelledby="timeline">
        <h2 id="timeline">Timeline, newest first</h2>
        ${timeline(history.data, timeZoneOf(view.workspace))}
      </section>
      ${eraseSection(services, view, lead, errors)}`,
  );
}

/** The PATCH the change form asks for: only what differs from the lead, as a PATCH naming it would. */
function patchOf(
  form: Record<string, string | undefined>,
  lead: Lead,
  zone: string,
): { patch: LeadPatch; errors: Record<string, string> } {
  const patch: LeadPatch = {};
  const errors: Record<string, string> = {};
  if (form.stage && form.stage !== lead.stage.key) patch.stage_key = form.stage;
  if (form.lost_reason && form.lost_reason !== lead.lost_reason?.key) patch.lost_reason_key = form.lost_reason;
  const owner = form.owner || null;
  if (owner !== (lead.owner?.email ?? null)) patch.owner_email = owner;
  // Read in the workspace's zone; the same wall time as shown is no change (the form has no seconds).
  const followUp = form.follow_up ?? '';
  const at = followUp ? momentOf(followUp, zone) : null;
  if (typeof at === 'string') errors.follow_up = at;
  else if (followUp !== inputValue(lead.next_follow_up_at, zone)) patch.next_follow_up_at = at?.toISOString() ?? null;
  const note = (form.note ?? '').trim();
  if (note.length > 5000) errors.note = 'Write at most 5,000 characters.';
  else if (note) patch.note = note;
  return { patch, errors };
}

function redirectTo(reply: FastifyReply, path: string, done: string): FastifyReply {
  return reply.redirect(`${path}?done=${done}`, 303);
}

export function registerLeadPages(app: TypedApp, services: AppServices): void {
  app.get('/w/:slug/leads', async (request, reply) => {
    const view = await memberView(services, request);
    const answer = await listPage(services, view, request.query as Query);
    return sendPage(reply, answer.body, answer.status);
  });

  app.get('/w/:slug/leads/:id', async (request, reply) => {
    const view = await memberView(services, request);
    const done = (request.query as Query).done;
    return sendPage(reply, await leadPage(services, view, idParam(request), { message: MESSAGES[done ?? ''] }));
  });

  app.post('/w/:slug/leads/:id', async (request, reply) => {
    const view = await memberView(services, request);
    allow(view, 'leads.change');
    const leadId = idParam(request);
    const form = formOf(request);
    const lead = await findLead(services.pool, view.workspace.id, false, leadId);
    if (!lead) throw new ConsoleRefusal(404, 'There is no such lead in this workspace.');
    const { patch, errors } = patchOf(form, lead, timeZoneOf(view.workspace));
    const refuse = async (status: number, errs: Record<string, string>) =>
      sendPage(reply, await leadPage(services, view, leadId, { errors: errs, values: form }), status);
    if (Object.keys(errors).length) return refuse(400, errors);
    if (Object.keys(patch).length === 0) return redirectTo(reply, request.url, 'unchanged');
    try {
      await updateLead(services, {
        workspace: view.workspace,
        sandbox: false,
        leadId,
        patch,
        context: contextOf(view),
      });
    } catch (error) {
      if (!isCommandError(error)) throw error;
      const refused = refusalErrors(error, FORM_FIELD);
      return refuse(refused.status, refused.errors);
    }
    return redirectTo(reply, request.url, 'changed');
  });

  app.post('/w/:slug/leads/:id/convert', async (request, reply) => {
    const view = await memberView(services, request);
    allow(view, 'applications.convert');
    const leadId = idParam(request);
    try {
      const state = await convertLeadToApplication(services, contextOf(view)(services.now()), view.workspace, leadId);
      return reply.redirect(`/console/w/${view.workspace.slug}/applications/${state.id}?done=converted`, 303);
    } catch (error) {
      if (!isCommandError(error)) throw error;
      const refused = refusalErrors(error, {}, 'convert');
      return sendPage(reply, await leadPage(services, view, leadId, { errors: refused.errors }), refused.status);
    }
  });

  app.post('/w/:slug/leads/:id/erase', async (request, reply) => {
    const view = await memberView(services, request);
    allow(view, 'leads.erase');
    const leadId = idParam(request);
    const form = formOf(request);
    const refuse = async (status: number, errors: Record<string, string>) =>
      sendPage(reply, await leadPage(services, view, leadId, { errors }), status);
    if (form.confirm !== 'yes')
      return refuse(400, { confirm: 'Tick the box to say you understand erasure cannot be undone.' });
    try {
      await allowRecent(services, view, 'leads.erase', form);
      await eraseLead(services, { tenantId: view.workspace.id, sandbox: false, leadId, context: contextOf(view) });
    } catch (error) {
      if (error instanceof ConsoleRefusal && error.field) return refuse(error.status, { [error.field]: error.message });
      if (!isCommandError(error)) throw error;
      const refused = refusalErrors(error, {}, 'erase_form');
      return refuse(refused.status, refused.errors);
    }
    return redirectTo(reply, `${leadsBase(view)}/${leadId}`, 'erased');
  });
}
