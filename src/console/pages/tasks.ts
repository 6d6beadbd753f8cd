import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import { isCommandError } from '../../commands/errors.js';
import { subjectOf } from '../../commands/subject.js';
import { createTask, handleTaskCommand, resolveAssignee } from '../../commands/tasks/task-commands.js';
import type { Task } from '../../http/schemas/task.js';
import type { TypedApp } from '../../http/typed-app.js';
import { can } from '../../identity/permissions.js';
import { findTask } from '../../projections/tasks.js';
import { ConsoleRefusal, sendPage, type MemberView } from '../context.js';
import { html, type Html } from '../html.js';
import { choice, csrfField, field, filters, notice, page } from '../layout.js';
import { subjectNamed } from '../queries/tasks.js';
import { renderList } from '../list/component.js';
import { TASK_FILTERS, TASKS, type TaskRow } from '../list/lists/tasks.js';
import type { ListSpec } from '../list/spec.js';
import { listQuerySchema, registerListExport } from '../list/routes.js';
import { contextOf, refusalErrors } from '../forms.js';
import { subjectName, subjectNames } from '../queries/subjects.js';
import { viewOf } from '../routes.js';
import { inputValue, momentOf, timeZoneOf, when } from '../time.js';
import { Done, FormBody, RecordParams, Text, WorkspaceParams, Uuid } from './record-schemas.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const base = (view: MemberView) => `/console/w/${view.workspace.slug}/tasks`;
const TASK_FIELDS = { title: 'title', assignee: 'assignee', due_at: 'due_at', lead_id: 'form', application_id: 'form' };

type Query = Record<string, string | undefined>;

const MESSAGES: Record<string, string> = {
  created: 'The task was created.',
  changed: 'The task was saved.',
  completed: 'The task was completed.',
  reopened: 'The task was reopened.',
};

/** What the task is for, by the person's name or the case number, linked to it. */
function subjectLink(view: MemberView, task: Task, names: Map<string, string>): Html {
  const name = subjectName(names, task);
  return task.lead_id
    ? html`<a href="/console/w/${view.workspace.slug}/leads/${task.lead_id}">${name}</a>`
    : html`<a href="/console/w/${view.workspace.slug}/applications/${task.application_id}">${name}</a>`;
}

function taskForm(
  view: MemberView,
  action: string,
  o: { task?: Task; values?: Query; errors?: Record<string, string>; hidden?: Html },
): Html {
  const v = o.values ?? {};
  const errors = o.errors ?? {};
  return html`<form method="post" action="${action}">
    ${csrfField(view.signedIn.csrf)} ${o.hidden ?? ''}
    ${field({ name: 'title', label: 'Title', value: v.title ?? o.task?.title ?? '', required: true, error: errors.title })}
    ${choice({
      name: 'assignee',
      label: 'Assignee',
      options: view.workspace.settings.users.filter((u) => u.active && !u.pending).map((u) => [u.email, u.name]),
      value: v.assignee ?? o.task?.assignee?.email ?? view.member.email,
      empty: 'Nobody',
      error: errors.assignee,
    })}
    ${field({
      name: 'due_at',
      label: `Due (${timeZoneOf(view.workspace)})`,
      type: 'datetime-local',
      value: v.due_at ?? (o.task ? inputValue(o.task.due_at, timeZoneOf(view.workspace)) : ''),
      required: true,
      error: errors.due_at,
    })}
    <button type="submit">${o.task ? 'Save the task' : 'Create the task'}</button>
  </form>`;
}

/** The Complete or Reopen button of a task's row (a column of the list for members who may change tasks). */
function flipButton(view: MemberView, task: Task): Html {
  const action = task.status === 'open' ? 'complete' : 'reopen';
  return html`<form method="post" action="${base(view)}/${task.id}/${action}" class="inline">
    ${csrfField(view.signedIn.csrf)}
    <button type="submit">
      ${task.status === 'open' ? 'Complete' : 'Reopen'}<span class="visually-hidden"> ${task.title}</span>
    </button>
  </form>`;
}

/** The task list with its Do column (Complete or Reopen) for members who may change tasks. */
const TASK_LIST: ListSpec<TaskRow> = {
  ...TASKS,
  columns: [
    ...TASKS.columns,
    {
      key: 'do',
      label: 'Do',
      operation: 'tasks.change',
      exported: false,
      cell: (row, ctx) => flipButton(ctx.view, row.body),
      text: () => '',
    },
  ],
};

/** The list's filters: whose (tabs), open or done. */
function taskFilters(view: MemberView, query: Query, errors: Record<string, string>): Html {
  const which = query.show ?? 'mine';
  const bySubject = Boolean(query.lead || query.application);
  const tab = (show: string, label: string) =>
    html`<li>
      <a href="${base(view)}?show=${show}" ${!bySubject && which === show ? html`aria-current="page"` : ''}>${label}</a>
    </li>`;
  const kept = (['show', 'lead', 'application'] as const).filter((n) => query[n]);
  return html`<nav aria-label="Which tasks">
      <ul>
        ${tab('mine', 'Mine')} ${tab('overdue', 'Overdue')} ${tab('all', 'All')}
      </ul>
    </nav>
    ${filters({
      action: base(view),
      label: 'Find tasks',
      active: query.status ? 1 : 0,
      main: html`${kept.map((n) => html`<input type="hidden" name="${n}" value="${query[n]}" />`)}`,
      more: choice({
        name: 'status',
        label: 'Status',
        options: [
          ['open', 'Open'],
          ['done', 'Completed'],
        ],
        value: query.status,
        empty: 'Open or done',
        error: errors.status,
      }),
    })}`;
}

async function tasksPage(
  services: AppServices,
  view: MemberView,
  query: Query,
  o: { errors?: Record<string, string>; values?: Query; message?: string; status?: number } = {},
): Promise<{ status: number; body: string }> {
  const list = await renderList(services, view, TASK_LIST, query);
  const errors = o.errors ?? {};
  const create = can(view.role, 'tasks.change') ? createSection(view, query, errors, o.values) : '';
  const body = page(
    view.frame('Tasks', 'Tasks'),
    html`${taskFilters(view, query, list.errors)} ${notice(o.message)}
    ${errors.task ? notice(errors.task, 'alert') : ''} ${list.body} ${create}`,
  );
  return { status: o.status ?? list.status, body };
}

/** The new-task form: for the lead or application in view, or one named by a case number, email or phone. */
function createSection(view: MemberView, query: Query, errors: Record<string, string>, values: Query | undefined) {
  const lead = UUID.test(query.lead ?? '') ? query.lead : undefined;
  const application = UUID.test(query.application ?? '') ? query.application : undefined;
  const hidden = lead
    ? html`<input type="hidden" name="lead_id" value="${lead}" />`
    : application
      ? html`<input type="hidden" name="application_id" value="${application}" />`
      : field({
          name: 'for',
          label: 'For',
          value: values?.for ?? '',
          hint: 'A case number, or the email or phone of a lead.',
          error: errors.for,
          required: true,
        });
  return html`<section aria-labelledby="new">
    <h2 id="new">New task</h2>
    ${errors.form ? notice(errors.form, 'alert') : ''} ${taskForm(view, base(view), { values, errors, hidden })}
  </section>`;
}

async function taskPage(
  services: AppServices,
  view: MemberView,
  id: string,
  o: { errors?: Record<string, string>; values?: Query; message?: string } = {},
) {
  const task = await findTask(services.pool, view.workspace.id, false, id);
  if (!task) throw new ConsoleRefusal(404, 'There is no such task in this workspace.');
  const names = await subjectNames(services.pool, view.workspace.id, [task]);
  return page(
    view.frame(task.title || 'Task', 'Tasks'),
    html`${notice(o.message)} ${o.errors?.form ? notice(o.errors.form, 'alert') : ''}
      <p>
        For ${subjectLink(view, task, names)}; ${task.status}, due
        ${when(task.due_at, timeZoneOf(view.workspace))}${task.overdue ? ' (overdue)' : ''}.
      </p>
      ${can(view.role, 'tasks.change') ? taskForm(view, `${base(view)}/${id}`, { task, values: o.values, errors: o.errors }) : ''}`,
  );
}

/**
 * The form's fields as the task commands take them, or refusals by field. Changing a task, a field absent from the
 * form keeps the task's value (it is never a change); creating one, an absent assignee is nobody.
 */
function taskInput(view: MemberView, form: TaskFormBody, task?: Task) {
  const errors: Record<string, string> = {};
  const title = (form.title ?? task?.title ?? '').trim();
  if (!title) errors.title = 'Enter a title.';
  const due =
    form.due_at === undefined && task ? new Date(task.due_at) : momentOf(form.due_at ?? '', timeZoneOf(view.workspace));
  if (typeof due === 'string') errors.due_at = due;
  let assignee = task && form.assignee === undefined ? task.assignee : null;
  if (form.assignee !== undefined)
    try {
      assignee = resolveAssignee(view.workspace, form.assignee || null);
    } catch {
      errors.assignee = 'Choose an active member of the workspace.';
    }
  return { errors, title, due: typeof due === 'string' ? undefined : due, assignee };
}

const TaskQuery = listQuerySchema({ filterNames: TASK_FILTERS }, { done: Done });
const TaskForm = FormBody({
  title: Type.Optional(Text(500)),
  assignee: Type.Optional(Text(320)),
  due_at: Type.Optional(Text(40)),
  lead_id: Type.Optional(Uuid),
  application_id: Type.Optional(Uuid),
  for: Type.Optional(Text(320)),
});
type TaskFormBody = Static<typeof TaskForm>;
const changing = { console: { operation: 'tasks.change' } } as const;

export function registerTaskPages(app: TypedApp, services: AppServices): void {
  registerListExport(app, services, TASKS);
  app.get(
    '/w/:slug/tasks',
    { schema: { params: WorkspaceParams, querystring: TaskQuery }, config: { console: { operation: 'tasks.view' } } },
    async (request, reply) => {
      const query = request.query as Query;
      const message = MESSAGES[query.done ?? ''];
      const answer = await tasksPage(services, viewOf(request), query, { message });
      return sendPage(reply, answer.body, answer.status);
    },
  );

  app.get(
    '/w/:slug/tasks/:id',
    {
      schema: { params: RecordParams, querystring: Type.Object({ done: Done }) },
      config: { console: { operation: 'tasks.view' } },
    },
    async (request, reply) => {
      const message = MESSAGES[request.query.done ?? ''];
      return sendPage(reply, await taskPage(services, viewOf(request), request.params.id, { message }));
    },
  );

  app.post(
    '/w/:slug/tasks',
    { schema: { params: WorkspaceParams, body: TaskForm }, config: changing },
    async (request, reply) => {
      const view = viewOf(request);
      const form = request.body;
      const query = { lead: form.lead_id, application: form.application_id, show: 'all' };
      const refuse = async (status: number, errors: Record<string, string>) =>
        sendPage(reply, (await tasksPage(services, view, query, { errors, values: form })).body, status);
      const input = taskInput(view, form);
      let named: { lead_id?: string; application_id?: string } | null = {
        lead_id: form.lead_id || undefined,
        application_id: form.application_id || undefined,
      };
      if (!named.lead_id && !named.application_id) {
        named = form.for?.trim() ? await subjectNamed(services.pool, view.workspace.id, form.for) : null;
        if (!named) input.errors.for = 'No case has this number and no lead this email or phone.';
      }
      if (Object.keys(input.errors).length) return refuse(400, input.errors);
      try {
        const subject = subjectOf(named!);
        await createTask(services.store, contextOf(view)(services.now()), {
          subject,
          title: input.title,
          assignee: input.assignee,
          due_at: input.due!,
        });
      } catch (error) {
        if (!isCommandError(error)) throw error;
        const refused = refusalErrors(error, TASK_FIELDS);
        return refuse(refused.status, refused.errors);
      }
      const back = form.lead_id
        ? `lead=${form.lead_id}`
        : form.application_id
          ? `application=${form.application_id}`
          : 'show=all';
      return reply.redirect(`${base(view)}?${back}&done=created`, 303);
    },
  );

  app.post(
    '/w/:slug/tasks/:id',
    { schema: { params: RecordParams, body: TaskForm }, config: changing },
    async (request, reply) => {
      const view = viewOf(request);
      const id = request.params.id;
      const form = request.body;
      const refuse = async (status: number, errors: Record<string, string>) =>
        sendPage(reply, await taskPage(services, view, id, { errors, values: form }), status);
      const task = await findTask(services.pool, view.workspace.id, false, id);
      if (!task) throw new ConsoleRefusal(404, 'There is no such task in this workspace.');
      const input = taskInput(view, form, task);
      if (Object.keys(input.errors).length) return refuse(400, input.errors);
      try {
        await handleTaskCommand(services.store, contextOf(view)(services.now()), id, (now) => ({
          type: 'change',
          now,
          title: input.title,
          assignee: input.assignee,
          due_at: input.due!,
        }));
      } catch (error) {
        if (!isCommandError(error)) throw error;
        const refused = refusalErrors(error, TASK_FIELDS);
        return refuse(refused.status, refused.errors);
      }
      return reply.redirect(`${base(view)}/${id}?done=changed`, 303);
    },
  );

  /** Completes or reopens a task, then back to the list it was done from, saying so. */
  const flip =
    (action: 'complete' | 'reopen') =>
    async (request: FastifyRequest<{ Params: { slug: string; id: string } }>, reply: FastifyReply) => {
      const view = viewOf(request);
      const id = request.params.id;
      try {
        await handleTaskCommand(services.store, contextOf(view)(services.now()), id, (now) => ({ type: action, now }));
      } catch (error) {
        if (!isCommandError(error)) throw error;
        const refused = refusalErrors(error, {}, 'task');
        return sendPage(reply, (await tasksPage(services, view, {}, { errors: refused.errors })).body, refused.status);
      }
      return reply.redirect(
        backToList(view, request.headers.referer, action === 'complete' ? 'completed' : 'reopened'),
        303,
      );
    };
  const flipRoute = { schema: { params: RecordParams, body: FormBody({}) }, config: changing };
  app.post('/w/:slug/tasks/:id/complete', flipRoute, flip('complete'));
  app.post('/w/:slug/tasks/:id/reopen', flipRoute, flip('reopen'));
}

/** The task list the form was sent from (its filters kept), with what happened; the member's tasks otherwise. */
function backToList(view: MemberView, referer: string | undefined, done: string): string {
  let search = new URLSearchParams();
  try {
    const from = referer ? new URL(referer) : undefined;
    if (from?.pathname === base(view)) search = new URLSearchParams(from.search);
    // Completed from Today: back to Today, which says so.
    if (from?.pathname === `/console/w/${view.workspace.slug}`) return `${from.pathname}?done=${done}`;
  } catch {
    // An unreadable Referer: back to the member's own tasks.
  }
  search.set('done', done);
  return `${base(view)}?${search.toString()}`;
}
