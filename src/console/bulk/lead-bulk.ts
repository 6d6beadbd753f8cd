import type { FastifyReply } from 'fastify';
import { Type, type Static } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import { LEAD_BULK_KINDS } from '../../commands/bulk/lead-actions.js';
import { can, type Operation } from '../../identity/permissions.js';
import type { TypedApp } from '../../http/typed-app.js';
import { createJob, type NewJobItem } from '../../jobs/jobs.js';
import { allow, ConsoleRefusal, sendPage, type MemberView } from '../context.js';
import { actorOf } from '../forms.js';
import { html, type Html } from '../html.js';
import { choice, csrfField, field, notice, page } from '../layout.js';
import { acceptedMembers } from '../queries/leads.js';
import { viewOf } from '../routes.js';
import { Choice } from '../schemas.js';
import { FormBody, Text, WorkspaceParams } from '../pages/record-schemas.js';
import { momentOf, timeZoneOf } from '../time.js';
import { selectedLeads, SelectionFields, selectionFields, type SelectionForm } from './selection.js';
import { jobsBase } from './job-pages.js';

/** The bulk actions on leads, and the operation of the permission table each needs. */
const ACTIONS = ['assign', 'move', 'task', 'export'] as const;
type BulkAction = (typeof ACTIONS)[number];
const OPERATION: Record<Exclude<BulkAction, 'export'>, Operation> = {
  assign: 'leads.change',
  move: 'leads.change',
  task: 'tasks.change',
};
const TITLES: Record<Exclude<BulkAction, 'export'>, string> = {
  assign: 'Assign an owner',
  move: 'Move to a stage',
  task: 'Add a task',
};

/** The bulk actions a role may take on leads (the list's bulk form offers only these). */
export function leadBulkActions(view: Pick<MemberView, 'role'>): Exclude<BulkAction, 'export'>[] {
  return (['assign', 'move', 'task'] as const).filter((a) => can(view.role, OPERATION[a]));
}

const BulkForm = FormBody({
  ...SelectionFields,
  action: Type.Optional(Choice(ACTIONS, 'Choose what to do with the selected leads.')),
  confirm: Type.Optional(Text(10)),
  owner: Type.Optional(Text(320)),
  stage: Type.Optional(Text(100)),
  lost_reason: Type.Optional(Text(100)),
  title: Type.Optional(Text(500)),
  due_at: Type.Optional(Text(40)),
  assignee: Type.Optional(Text(320)),
});
type BulkFormBody = Static<typeof BulkForm>;

const leadsPath = (view: MemberView) => `/console/w/${view.workspace.slug}/leads`;

/** Members who may own leads and can sign in: the owners a bulk assignment offers (each with their branch). */
async function ownerOptions(services: AppServices, view: MemberView): Promise<[string, string][]> {
  const s = view.workspace.settings;
  const candidates = s.users.filter((u) => u.active && !u.pending && can(u.role, 'leads.change'));
  const accepted = await acceptedMembers(
    services.pool,
    candidates.map((u) => u.email),
  );
  const branch = (id: string | null | undefined) => s.branches.find((b) => b.id === id)?.code ?? '';
  return candidates
    .filter((u) => accepted.has(u.email.toLowerCase()))
    .map((u) => [u.email, `${u.name}${branch(u.branch_id) ? ` (${branch(u.branch_id)})` : ''}`]);
}

/** What the action asks for besides the selection: an owner, a stage, or a task's title, due time and assignee. */
async function actionInputs(
  services: AppServices,
  view: MemberView,
  action: Exclude<BulkAction, 'export'>,
  form: BulkFormBody,
  errors: Record<string, string>,
): Promise<Html> {
  const s = view.workspace.settings;
  switch (action) {
    case 'assign':
      return html`${choice({ name: 'owner', label: 'New owner', options: await ownerOptions(services, view), value: form.owner, empty: 'No owner', error: errors.owner })}
        <p class="hint">A lead whose branch is not the owner’s is left as it is, and listed with the reason.</p>`;
    case 'move':
      return html`${choice({
        name: 'stage',
        label: 'Stage',
        options: s.pipeline.stages.filter((x) => x.key !== 'converted').map((x) => [x.key, x.name]),
        value: form.stage,
        error: errors.stage,
      })}
      ${choice({
        name: 'lost_reason',
        label: 'Lost reason (when the stage is lost)',
        options: s.lost_reasons.map((x) => [x.key, x.name]),
        value: form.lost_reason,
        empty: 'None',
        error: errors.lost_reason,
      })}`;
    case 'task':
      return html`${field({ name: 'title', label: 'Task title', value: form.title, error: errors.title, required: true })}
      ${field({ name: 'due_at', label: `Due (${timeZoneOf(view.workspace)})`, type: 'datetime-local', value: form.due_at, error: errors.due_at, required: true })}
      ${choice({
        name: 'assignee',
        label: 'Assigned to',
        options: [
          ['lead_owner', 'Each lead’s owner'],
          ...s.users.filter((u) => u.active && !u.pending).map((u): [string, string] => [u.email, u.name]),
        ],
        value: form.assignee ?? 'lead_owner',
        empty: 'Nobody',
        error: errors.assignee,
      })}`;
  }
}

/** The step before a bulk action: what will be done to how many leads, and the action's own fields. */
async function confirmation(
  services: AppServices,
  view: MemberView,
  action: Exclude<BulkAction, 'export'>,
  form: BulkFormBody,
  count: number,
  errors: Record<string, string> = {},
): Promise<string> {
  const noun = count === 1 ? 'lead' : 'leads';
  const which =
    form.scope === 'matching'
      ? `every lead matching the list’s filters: ${count} ${noun}`
      : `${count} selected ${noun}`;
  const title = `${TITLES[action]}: ${count} ${noun}`;
  return page(
    view.frame(title, 'Leads'),
    html`${errors.form ? notice(errors.form, 'alert') : ''}
      <p>
        This changes ${which}, each as its own change on its timeline with you as the one who made it. It runs in the
        background: the next page shows its progress, and which leads were left as they were and why.
      </p>
      <form method="post" action="${leadsPath(view)}/bulk" class="confirm">
        ${csrfField(view.signedIn.csrf)}
        ${selectionFields(form).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`)}
        <input type="hidden" name="action" value="${action}" />
        <input type="hidden" name="confirm" value="yes" />
        ${await actionInputs(services, view, action, form, errors)}
        <button type="submit">${TITLES[action]} for ${count} ${noun}</button>
        <a href="${leadsPath(view)}${form.scope === 'matching' && form.query ? `?${form.query}` : ''}"
          >Cancel, change nothing</a
        >
      </form>`,
  );
}

/** The job's parameters from the confirmed form, or the form's errors by field. */
function paramsOf(
  view: MemberView,
  action: Exclude<BulkAction, 'export'>,
  form: BulkFormBody,
): { params: unknown; errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  const s = view.workspace.settings;
  switch (action) {
    case 'assign': {
      const owner = (form.owner ?? '').trim().toLowerCase();
      if (owner && !s.users.some((u) => u.email === owner && u.active && !u.pending))
        errors.owner = 'Choose an active member of the workspace.';
      return { params: { owner_email: owner || null }, errors };
    }
    case 'move': {
      const stage = s.pipeline.stages.find((x) => x.key === form.stage && x.key !== 'converted');
      if (!stage) errors.stage = 'Choose a stage of the pipeline.';
      const reason = form.lost_reason || null;
      if (stage?.lost && !reason)
        errors.lost_reason = 'Choose a lost reason: a lead moves to the lost stage only with one.';
      if (reason && !s.lost_reasons.some((r) => r.key === reason))
        errors.lost_reason = 'Choose one of the lost reasons.';
      if (reason && stage && !stage.lost) errors.lost_reason = 'A lost reason applies only to the lost stage.';
      return { params: { stage_key: form.stage ?? '', lost_reason_key: reason }, errors };
    }
    case 'task': {
      const title = (form.title ?? '').trim();
      if (!title) errors.title = 'Enter a title.';
      const due = momentOf(form.due_at ?? '', timeZoneOf(view.workspace));
      if (typeof due === 'string') errors.due_at = due;
      const assignee = form.assignee || null;
      if (assignee && assignee !== 'lead_owner' && !s.users.some((u) => u.email === assignee && u.active && !u.pending))
        errors.assignee = 'Choose an active member of the workspace.';
      return {
        params: { title, due_at: typeof due === 'string' ? '' : due.toISOString(), assignee },
        errors,
      };
    }
  }
}

async function bulk(services: AppServices, view: MemberView, form: BulkFormBody, reply: FastifyReply) {
  const action = form.action;
  if (!action) throw new ConsoleRefusal(400, 'Choose what to do with the selected leads.');
  // The lists' own CSV export takes the same selection: the browser posts it there (307 keeps the method and body).
  if (action === 'export') return reply.redirect(`${leadsPath(view)}/export`, 307);
  allow(view, OPERATION[action]);
  const leads = await selectedLeads(services, view, form);
  if (leads.length === 0)
    throw new ConsoleRefusal(400, 'No lead was selected: tick at least one row, or choose all matching.');
  if (form.confirm !== 'yes') return sendPage(reply, await confirmation(services, view, action, form, leads.length));
  const { params, errors } = paramsOf(view, action, form);
  if (Object.keys(errors).length > 0)
    return sendPage(reply, await confirmation(services, view, action, form, leads.length, errors), 400);
  const items: NewJobItem[] = leads.map((lead_id) => ({ subject: lead_id, input: { lead_id } }));
  const id = await createJob(services.pool, {
    tenantId: view.workspace.id,
    sandbox: false,
    kind: LEAD_BULK_KINDS[action],
    actor: actorOf(view),
    params,
    items,
    now: services.now(),
  });
  return reply.redirect(`${jobsBase(view)}/${id}?done=started`, 303);
}

export function registerLeadBulkPages(app: TypedApp, services: AppServices): void {
  app.post(
    '/w/:slug/leads/bulk',
    { schema: { params: WorkspaceParams, body: BulkForm }, config: { console: { operation: 'leads.view' } } },
    async (request, reply) => bulk(services, viewOf(request), request.body, reply),
  );
}

export type { SelectionForm };
