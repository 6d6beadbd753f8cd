import type { FastifyReply } from 'fastify';
import type { MetaField } from '../../schemas/meta-field.js';
import type { AppServices } from '../../bootstrap.js';
import { convertLeadToApplication } from '../../commands/applications/convert-lead.js';
import { isCommandError } from '../../commands/errors.js';
import { readHistoryPage } from '../../commands/history/history.js';
import { addLeadNote } from '../../commands/leads/add-lead-note.js';
import { eraseLead } from '../../commands/leads/erase-lead.js';
import { updateLead } from '../../commands/leads/update-lead.js';
import type { LeadPatch } from '../../domain/leads/decide.js';
import type { Lead } from '../../domain/leads/lead.js';
import type { WorkspaceUser } from '../../workspaces/workspace.js';
import type { TypedApp } from '../../http/typed-app.js';
import { can } from '../../identity/permissions.js';
import { findLead } from '../../projections/leads-queries.js';
import { Type } from 'typebox';
import { allowRecent, ConsoleRefusal, needsPassword, sendPage, type MemberView } from '../context.js';
import { html, type Html } from '../html.js';
import { choice, csrfField, field, filters, notice, page } from '../layout.js';
import { acceptedMembers, applicationsOfLead, isErased } from '../queries/leads.js';
import { renderList } from '../list/component.js';
import { LEAD_FILTERS, LEADS } from '../list/lists/leads.js';
import { listQuerySchema, registerListExport, registerListScript } from '../list/routes.js';
import { contextOf, refusalErrors, textArea } from '../forms.js';
import { viewOf } from '../routes.js';
import { boardLinkOf } from '../board/filter.js';
import { confirmPage } from './confirm.js';
import { Done, FormBody, RecordParams, Text, WorkspaceParams } from './record-schemas.js';
import { inputValue, momentOf, timeZoneOf, when } from '../time.js';
import { timeline } from '../timeline.js';
import { branchName, countryName, phoneText, stageText, visaTypeName } from '../labels.js';

export const leadsBase = (view: MemberView) => `/console/w/${view.workspace.slug}/leads`;

type Query = Record<string, string | undefined>;

/** The search form in one row: the text search, then the settings' choices and two date ranges (folded until used). */
function filterForm(view: MemberView, query: Query, errors: Record<string, string>): Html {
  const s = view.workspace.settings;
  const dateField = (name: string, label: string) =>
    field({ name, label, type: 'date', value: query[name] ?? '', error: errors[name] });
  const more = LEAD_FILTERS.filter((n) => n !== 'q' && query[n]).length;
  return filters({
    action: leadsBase(view),
    label: 'Find leads',
    active:
      more + Object.keys(errors).filter((n) => (LEAD_FILTERS as readonly string[]).includes(n) && n !== 'q').length,
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
        options: [['none', 'No owner'], ...s.users.filter((u) => mayOwnLeads(u)).map((u) => [u.id, u.name] as const)],
        value: query.owner,
        empty: 'Anyone',
      })}
      ${choice({ name: 'branch', label: 'Branch', options: s.branches.map((b) => [b.id, b.name]), value: query.branch, empty: 'Any branch' })}
      ${choice({ name: 'visa_type', label: 'Visa type', options: s.visa_types.map((v) => [v, visaTypeName(v)]), value: query.visa_type, empty: 'Any visa type' })}
      ${choice({ name: 'country', label: 'Country', options: s.countries.map((c) => [c, countryName(c)]), value: query.country, empty: 'Any country' })}
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

async function listPage(
  services: AppServices,
  view: MemberView,
  query: Query,
): Promise<{ status: number; body: string }> {
  const list = await renderList(services, view, LEADS, query);
  const entry = can(view.role, 'leads.create')
    ? html`<p><a href="${leadsBase(view)}/new">New lead (a walk-in or a phone call)</a></p>`
    : '';
  const importLink = can(view.role, 'leads.import')
    ? html`<p><a href="${leadsBase(view)}/import">Import leads from a CSV file</a></p>`
    : '';
  const body = html`${entry} ${boardLinkOf(leadsBase(view), query, 'leads')} ${importLink}
  ${filterForm(view, query, list.errors)} ${list.body}`;
  return { status: list.status, body: page(view.frame('Leads', 'Leads'), body) };
}

/** Whether a member's role lets them own leads (they change their leads: a viewer does not). */
const mayOwnLeads = (u: Pick<WorkspaceUser, 'role'>) => can(u.role, 'leads.change');

/** Refusals of the update command by the field of the form they concern, and the words the form names them with. */
const FORM_FIELD: Record<string, string> = {
  stage_key: 'stage',
  lost_reason_key: 'lost_reason',
  owner_email: 'owner',
  next_follow_up_at: 'follow_up',
  note: 'note',
};
const FIELD_LABELS: Record<string, string> = {
  stage_key: 'the stage',
  lost_reason_key: 'the lost reason',
  owner_email: 'the owner',
  next_follow_up_at: 'the follow-up',
  note: 'the note',
};

const MESSAGES: Record<string, string> = {
  changed: 'The lead was changed.',
  noted: 'The note was added to the timeline.',
  unchanged: 'Nothing was different, so nothing was changed.',
  erased: 'The person was erased: their personal data can no longer be read anywhere.',
  entered: 'The lead was entered: it is assigned as the workspace’s rules say, with the console as its source.',
};

interface LeadPageState {
  errors?: Record<string, string>;
  values?: Record<string, string | undefined>;
  message?: string;
}

/** A custom field's value in words: an option's label, yes or no, a list joined, or the text as it is. */
function customValue(field: MetaField | undefined, value: unknown): string {
  const label = (v: unknown) => field?.options?.find((o) => o.value === v)?.label ?? String(v);
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (Array.isArray(value)) return value.map(label).join(', ');
  if (value === null || value === undefined) return '';
  return typeof value === 'object' ? JSON.stringify(value) : label(value);
}

/** The lead's custom fields, by the labels of the workspace's definition (a field no longer defined by its key). */
function customFacts(view: MemberView, lead: Lead): Html | '' {
  const entries = Object.entries(lead.custom_fields ?? {});
  if (entries.length === 0) return '';
  const defined = view.workspace.settings.custom_fields;
  return html`<section aria-labelledby="custom">
    <h2 id="custom">More about them</h2>
    <dl class="facts">
      ${entries.map(([key, value]) => {
        const field = defined.find((f) => f.key === key);
        const shown = customValue(field, value);
        return html`<dt>${field?.label ?? key.replaceAll('_', ' ')}</dt>
          <dd>${shown === '' ? '—' : shown}</dd>`;
      })}
    </dl>
  </section>`;
}

function leadFacts(view: MemberView, lead: Lead, zone: string): Html {
  const rows: [string, unknown][] = [
    ['Name', lead.full_name || '(erased)'],
    ['Phone', lead.phone ? phoneText(lead.phone) : null],
    ['Email', lead.email],
    ['City', lead.city],
    ['Visa type', lead.visa_type ? visaTypeName(lead.visa_type) : null],
    ['Country of interest', lead.country_interest ? countryName(lead.country_interest) : null],
    ['Source', lead.source.name],
    ['Branch', branchName(view.workspace.settings, lead.branch)],
    ['Owner', lead.owner ? `${lead.owner.name} (${lead.owner.email})` : null],
    ['Stage', stageText(lead)],
    ['Lost reason', lead.lost_reason?.name],
    ['Temperature', lead.temperature],
    ['Score', lead.score],
    ['Next follow-up', lead.next_follow_up_at ? when(lead.next_follow_up_at, zone) : null],
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
function changeSection(view: MemberView, lead: Lead, owners: WorkspaceUser[], o: LeadPageState): Html | '' {
  if (lead.converted) return lockedSection(view, lead, o);
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
        options: owners.map((u) => [u.email, u.name]),
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

/** A converted lead: what is locked (its fields) and what is not (notes), with the note form for who may add one. */
function lockedSection(view: MemberView, lead: Lead, o: LeadPageState): Html {
  const errors = o.errors ?? {};
  const noteForm = can(view.role, 'leads.change')
    ? html`<form method="post" action="${leadsBase(view)}/${lead.id}/notes">
        ${csrfField(view.signedIn.csrf)}
        ${textArea({ name: 'note', label: 'Add a note', value: o.values?.note, error: errors.note })}
        <button type="submit">Add the note</button>
      </form>`
    : '';
  return html`<section aria-labelledby="locked">
    <h2 id="locked">Converted: what is locked</h2>
    <p>
      This lead was converted to an application, so its stage, owner, follow-up and details are locked: that work goes
      on in the application. Notes are not locked: they can still be added here and on the application.
    </p>
    ${noteForm}
  </section>`;
}

function convertSection(view: MemberView, lead: Lead, errors: Record<string, string>): Html | '' {
  if (!can(view.role, 'applications.convert') || lead.converted) return '';
  return html`<section aria-labelledby="convert">
    <h2 id="convert">Convert to an application</h2>
    ${errors.convert ? html`<p class="error" id="convert-error">${errors.convert}</p>` : ''}
    <p><a href="${leadsBase(view)}/${lead.id}/convert">Convert ${lead.full_name} to an application…</a></p>
  </section>`;
}

/** Erasing the person: what it does, a box to tick, and the password when the sign-in is not recent. */
function eraseSection(
  services: AppServices,
  view: MemberView,
  lead: Lead,
  erased: boolean,
  errors: Record<string, string>,
): Html | '' {
  if (!can(view.role, 'leads.erase')) return '';
  if (erased)
    return html`<p>
      This person was erased: their personal data can no longer be read here, in exports or in webhook deliveries.
    </p>`;
  return html`<section aria-labelledby="erase">
    <h2 id="erase">Erase this person</h2>
    <p>
      Erasing removes ${lead.full_name}’s personal data for good, from this lead, its applications and their documents,
      tasks and invoices: name, phone, email and every other personal detail can never be read again, here, in exports
      or in webhook deliveries. The records stay, without the person. This cannot be undone.
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
  const lead = await findLead(services.pool, view.workspace.id, false, leadId);
  if (!lead) throw new ConsoleRefusal(404, 'There is no such lead in this workspace.');
  const erased = await isErased(services.pool, view.workspace.id, leadId);
  const owners = await ownerChoices(services, view, lead);
  const history = await readHistoryPage(services, { tenantId: view.workspace.id, sandbox: false }, 'lead', leadId, {
    limit: 10_000,
  });
  const applications = await applicationsOfLead(services.pool, view.workspace.id, leadId);
  const errors = o.errors ?? {};
  return page(
    view.frame(lead.full_name || 'Erased person', 'Leads'),
    html`${notice(o.message)} ${errors.form ? notice(errors.form, 'alert') : ''}
      ${recordLinks(view, leadId, applications)} ${leadFacts(view, lead, timeZoneOf(view.workspace))}
      ${customFacts(view, lead)} ${changeSection(view, lead, owners, o)} ${convertSection(view, lead, errors)}
      <section aria-labelledby="timeline">
        <h2 id="timeline">Timeline, newest first</h2>
        ${timeline(history.data, timeZoneOf(view.workspace))}
      </section>
      ${eraseSection(services, view, lead, erased, errors)}`,
  );
}

/**
 * Who the owner drop-down offers: active members of the lead's branch whose role may own leads and who accepted their
 * invitation (they have signed in with a password or a passkey); the current owner stays listed, so keeping them is
 * no change.
 */
async function ownerChoices(services: AppServices, view: MemberView, lead: Lead): Promise<WorkspaceUser[]> {
  const candidates = view.workspace.settings.users.filter(
    (u) => u.active && !u.pending && u.branch_id === lead.branch.id && mayOwnLeads(u),
  );
  const accepted = await acceptedMembers(
    services.pool,
    candidates.map((u) => u.email),
  );
  return view.workspace.settings.users.filter(
    (u) => (candidates.includes(u) && accepted.has(u.email.toLowerCase())) || u.id === lead.owner?.id,
  );
}

/** The change form's fields; each may be absent (a form that does not show a field does not send it). */
export interface LeadForm {
  stage?: string;
  lost_reason?: string;
  owner?: string;
  follow_up?: string;
  note?: string;
}

/**
 * The PATCH the change form asks for: only the fields the form holds whose values differ from the lead's. A field
 * absent from the form is never a change; one present and empty clears what it names (no owner, no follow-up).
 */
export function patchOf(
  form: LeadForm,
  lead: Pick<Lead, 'stage' | 'lost_reason' | 'owner' | 'next_follow_up_at'>,
  zone: string,
): { patch: LeadPatch; errors: Record<string, string> } {
  const patch: LeadPatch = {};
  const errors: Record<string, string> = {};
  if (form.stage !== undefined && form.stage !== '' && form.stage !== lead.stage.key) patch.stage_key = form.stage;
  if (form.lost_reason !== undefined) {
    const reason = form.lost_reason || null;
    if (reason !== (lead.lost_reason?.key ?? null)) patch.lost_reason_key = reason;
  }
  if (form.owner !== undefined) {
    const owner = form.owner.trim().toLowerCase() || null;
    if (owner !== (lead.owner?.email.toLowerCase() ?? null)) patch.owner_email = owner;
  }
  // Read in the workspace's zone; the wall time the form showed is no change (the form has no seconds).
  if (form.follow_up !== undefined && form.follow_up !== inputValue(lead.next_follow_up_at, zone)) {
    const at = form.follow_up === '' ? null : momentOf(form.follow_up, zone);
    if (typeof at === 'string') errors.follow_up = at;
    else patch.next_follow_up_at = at?.toISOString() ?? null;
  }
  const note = (form.note ?? '').trim();
  if (note.length > 5000) errors.note = 'Write at most 5,000 characters.';
  else if (note) patch.note = note;
  return { patch, errors };
}

/** The step before a conversion: the lead is locked from then on, and its work goes on in the application. */
async function convertConfirmation(services: AppServices, view: MemberView, leadId: string, error?: string) {
  const lead = await findLead(services.pool, view.workspace.id, false, leadId);
  if (!lead) throw new ConsoleRefusal(404, 'There is no such lead in this workspace.');
  const back = `${leadsBase(view)}/${leadId}`;
  if (lead.converted) throw new ConsoleRefusal(409, 'This lead was converted to an application already.');
  return confirmPage(view, {
    title: `Convert ${lead.full_name || 'this lead'} to an application`,
    current: 'Leads',
    consequence: `An application (a case with its own number) is opened for ${lead.full_name || 'this person'}, and the
      lead is locked: its stage, owner and follow-up can no longer be changed, and the work goes on in the application.
      A conversion cannot be undone.`,
    action: `${back}/convert`,
    button: 'Convert to an application',
    back,
    error,
  });
}

function redirectTo(reply: FastifyReply, path: string, done: string): FastifyReply {
  return reply.redirect(`${path}?done=${done}`, 303);
}

const LeadQuery = listQuerySchema(LEADS);
const ChangeForm = FormBody({
  stage: Type.Optional(Text(100)),
  lost_reason: Type.Optional(Text(100)),
  owner: Type.Optional(Text(320)),
  follow_up: Type.Optional(Text(40)),
  note: Type.Optional(Text(10_000)),
});
const EraseForm = FormBody({ confirm: Type.Optional(Text(10)), password: Type.Optional(Text(1024)) });

export function registerLeadPages(app: TypedApp, services: AppServices): void {
  registerListExport(app, services, LEADS);
  registerListScript(app);
  app.get(
    '/w/:slug/leads',
    { schema: { params: WorkspaceParams, querystring: LeadQuery }, config: { console: { operation: 'leads.view' } } },
    async (request, reply) => {
      const answer = await listPage(services, viewOf(request), request.query);
      return sendPage(reply, answer.body, answer.status);
    },
  );

  app.get(
    '/w/:slug/leads/:id',
    {
      schema: { params: RecordParams, querystring: Type.Object({ done: Done }) },
      config: { console: { operation: 'leads.view' } },
    },
    async (request, reply) => {
      const message = MESSAGES[request.query.done ?? ''];
      return sendPage(reply, await leadPage(services, viewOf(request), request.params.id, { message }));
    },
  );

  app.post(
    '/w/:slug/leads/:id',
    { schema: { params: RecordParams, body: ChangeForm }, config: { console: { operation: 'leads.change' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const leadId = request.params.id;
      const form = request.body;
      const lead = await findLead(services.pool, view.workspace.id, false, leadId);
      if (!lead) throw new ConsoleRefusal(404, 'There is no such lead in this workspace.');
      const { patch, errors } = patchOf(form, lead, timeZoneOf(view.workspace));
      const refuse = async (status: number, errs: Record<string, string>) =>
        sendPage(reply, await leadPage(services, view, leadId, { errors: errs, values: form }), status);
      if (Object.keys(errors).length) return refuse(400, errors);
      const back = `${leadsBase(view)}/${leadId}`;
      if (Object.keys(patch).length === 0) return redirectTo(reply, back, 'unchanged');
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
        const refused = refusalErrors(error, FORM_FIELD, 'form', FIELD_LABELS);
        return refuse(refused.status, refused.errors);
      }
      return redirectTo(reply, back, Object.keys(patch).join() === 'note' ? 'noted' : 'changed');
    },
  );

  const converting = { console: { operation: 'applications.convert' } } as const;
  app.get(
    '/w/:slug/leads/:id/convert',
    { schema: { params: RecordParams }, config: converting },
    async (request, reply) => sendPage(reply, await convertConfirmation(services, viewOf(request), request.params.id)),
  );

  app.post(
    '/w/:slug/leads/:id/convert',
    {
      schema: { params: RecordParams, body: FormBody({ confirm: Type.Optional(Text(10)) }) },
      config: converting,
    },
    async (request, reply) => {
      const view = viewOf(request);
      const leadId = request.params.id;
      if (request.body.confirm !== 'yes')
        return sendPage(
          reply,
          await convertConfirmation(services, view, leadId, 'Nothing was converted yet: confirm below.'),
          400,
        );
      try {
        const state = await convertLeadToApplication(services, contextOf(view)(services.now()), view.workspace, leadId);
        return reply.redirect(`/console/w/${view.workspace.slug}/applications/${state.id}?done=converted`, 303);
      } catch (error) {
        if (!isCommandError(error)) throw error;
        const refused = refusalErrors(error, {}, 'convert');
        return sendPage(reply, await leadPage(services, view, leadId, { errors: refused.errors }), refused.status);
      }
    },
  );

  app.post(
    '/w/:slug/leads/:id/notes',
    {
      schema: { params: RecordParams, body: FormBody({ note: Type.Optional(Text(10_000)) }) },
      config: { console: { operation: 'leads.change' } },
    },
    async (request, reply) => {
      const view = viewOf(request);
      const leadId = request.params.id;
      const note = (request.body.note ?? '').trim();
      const refuse = async (status: number, errors: Record<string, string>) =>
        sendPage(reply, await leadPage(services, view, leadId, { errors, values: { note } }), status);
      if (!note) return refuse(400, { note: 'Write the note first.' });
      if (note.length > 5000) return refuse(400, { note: 'Write at most 5,000 characters.' });
      try {
        await addLeadNote(services, { tenantId: view.workspace.id, leadId, note, context: contextOf(view) });
      } catch (error) {
        if (!isCommandError(error)) throw error;
        const refused = refusalErrors(error, { note: 'note' }, 'form', FIELD_LABELS);
        return refuse(refused.status, refused.errors);
      }
      return redirectTo(reply, `${leadsBase(view)}/${leadId}`, 'noted');
    },
  );

  app.post(
    '/w/:slug/leads/:id/erase',
    { schema: { params: RecordParams, body: EraseForm }, config: { console: { operation: 'leads.erase' } } },
    async (request, reply) => {
      const view = viewOf(request);
      const leadId = request.params.id;
      const form = request.body;
      const refuse = async (status: number, errors: Record<string, string>) =>
        sendPage(reply, await leadPage(services, view, leadId, { errors }), status);
      if (form.confirm !== 'yes')
        return refuse(400, { confirm: 'Tick the box to say you understand erasure cannot be undone.' });
      try {
        await allowRecent(services, view, 'leads.erase', form);
        await eraseLead(services, { tenantId: view.workspace.id, sandbox: false, leadId, context: contextOf(view) });
      } catch (error) {
        if (error instanceof ConsoleRefusal && error.field)
          return refuse(error.status, { [error.field]: error.message });
        if (!isCommandError(error)) throw error;
        const refused = refusalErrors(error, {}, 'erase_form');
        return refuse(refused.status, refused.errors);
      }
      return redirectTo(reply, `${leadsBase(view)}/${leadId}`, 'erased');
    },
  );
}
