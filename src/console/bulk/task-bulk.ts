import { Type, type Static } from 'typebox';
import type { FastifyReply } from 'fastify';
import type { AppServices } from '../../bootstrap.js';
import { TASK_BULK_KINDS } from '../../commands/bulk/application-actions.js';
import type { TypedApp } from '../../http/typed-app.js';
import { createJob } from '../../jobs/jobs.js';
import { allow, ConsoleRefusal, sendPage, type MemberView } from '../context.js';
import { actorOf } from '../forms.js';
import { html } from '../html.js';
import { choice, csrfField, page } from '../layout.js';
import { matchingIdsOf } from '../list/routes.js';
import { TASKS } from '../list/lists/tasks.js';
import { viewOf } from '../routes.js';
import { Choice, listOf } from '../schemas.js';
import { FormBody, Text, WorkspaceParams } from '../pages/record-schemas.js';
import { MAX_SELECTION, SelectionFields, selectionFields } from './selection.js';
import { jobsBase } from './job-pages.js';

/* Bulk work on tasks, as the tasks list offers it: assign the selected tasks to a member (tasks.change). */

const BulkForm = FormBody({
  ...SelectionFields,
  action: Type.Optional(Choice(['assign', 'export'] as const, 'Choose what to do with the selected tasks.')),
  confirm: Type.Optional(Text(10)),
  assignee: Type.Optional(Text(320)),
});
type BulkFormBody = Static<typeof BulkForm>;

const tasksPath = (view: MemberView) => `/console/w/${view.workspace.slug}/tasks`;

async function selectedTasks(services: AppServices, view: MemberView, form: BulkFormBody): Promise<string[]> {
  if (form.scope === 'matching') {
    const all = await matchingIdsOf(services, view, TASKS, form.query ?? '', MAX_SELECTION + 1);
    if (all.length > MAX_SELECTION)
      throw new ConsoleRefusal(400, `More than ${MAX_SELECTION.toLocaleString('en')} tasks match: narrow the filters.`);
    return all;
  }
  const ids = [...new Set(listOf(form.ids).map((id) => id.toLowerCase()))];
  if (ids.length === 0) return [];
  const found = await services.pool.query<{ id: string }>(
    `SELECT id FROM tasks WHERE tenant_id = $1 AND sandbox = false AND id = ANY($2::uuid[]) ORDER BY id`,
    [view.workspace.id, ids],
  );
  return found.rows.map((r) => r.id);
}

function confirmation(view: MemberView, form: BulkFormBody, count: number, error?: string): string {
  const noun = count === 1 ? 'task' : 'tasks';
  const members = view.workspace.settings.users.filter((u) => u.active && !u.pending);
  return page(
    view.frame(`Assign to a member: ${count} ${noun}`, 'Tasks'),
    html`<p>
        This assigns ${count} ${noun}, each as its own change with you as the one who made it. It runs in the
        background: the next page shows its progress, and which tasks were left as they were and why.
      </p>
      <form method="post" action="${tasksPath(view)}/bulk" class="confirm">
        ${csrfField(view.signedIn.csrf)}
        ${selectionFields(form).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`)}
        <input type="hidden" name="action" value="assign" />
        <input type="hidden" name="confirm" value="yes" />
        ${choice({ name: 'assignee', label: 'Assigned to', options: members.map((u) => [u.email, u.name]), value: form.assignee, empty: 'Nobody', error })}
        <button type="submit">Assign ${count} ${noun}</button>
        <a href="${tasksPath(view)}">Cancel, change nothing</a>
      </form>`,
  );
}

async function bulk(services: AppServices, view: MemberView, form: BulkFormBody, reply: FastifyReply) {
  if (!form.action) throw new ConsoleRefusal(400, 'Choose what to do with the selected tasks.');
  if (form.action === 'export') return reply.redirect(`${tasksPath(view)}/export`, 307);
  allow(view, 'tasks.change');
  const ids = await selectedTasks(services, view, form);
  if (ids.length === 0)
    throw new ConsoleRefusal(400, 'No task was selected: tick at least one row, or choose all matching.');
  if (form.confirm !== 'yes') return sendPage(reply, confirmation(view, form, ids.length));
  const assignee = (form.assignee ?? '').trim().toLowerCase() || null;
  if (assignee && !view.workspace.settings.users.some((u) => u.email === assignee && u.active && !u.pending))
    return sendPage(reply, confirmation(view, form, ids.length, 'Choose an active member of the workspace.'), 400);
  const id = await createJob(services.pool, {
    tenantId: view.workspace.id,
    sandbox: false,
    kind: TASK_BULK_KINDS.assign,
    actor: actorOf(view),
    params: { assignee },
    items: ids.map((task_id) => ({ subject: task_id, input: { task_id } })),
    now: services.now(),
  });
  return reply.redirect(`${jobsBase(view)}/${id}?done=started`, 303);
}

export function registerTaskBulkPages(app: TypedApp, services: AppServices): void {
  app.post(
    '/w/:slug/tasks/bulk',
    { schema: { params: WorkspaceParams, body: BulkForm }, config: { console: { operation: 'tasks.view' } } },
    async (request, reply) => bulk(services, viewOf(request), request.body, reply),
  );
}
