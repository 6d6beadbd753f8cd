import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../bootstrap.js';
import { isCommandError } from '../../commands/errors.js';
import { subjectOf } from '../../commands/subject.js';
import { createTaskCommand, operateTask, resolveAssignee } from '../../commands/tasks/task-commands.js';
import type { Task } from '../../http/schemas/task.js';
import type { TypedApp } from '../../http/typed-app.js';
import { can } from '../../identity/permissions.js';
import { findTask } from '../../projections/tasks.js';
import { allow, ConsoleRefusal, formOf, memberView, sendPage, type MemberView } from '../context.js';
import { html, type Html, table } from '../html.js';
import { choice, csrfField, field, notice, page } from '../layout.js';
import { listConsoleTasks, type TaskFilter } from '../queries/tasks.js';
import { contextOf, idParam, refusalErrors } from '../forms.js';
import { inputValue, momentOf, timeZoneOf, when } from '../time.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const base = (view: MemberView) => `/console/w/${view.workspace.slug}/tasks`;
const TASK_FIELDS = { title: 'title', assignee: 'assignee', due_at: 'due_at', lead_id: 'form', application_id: 'form' };

type Query = Record<string, string | undefined>;

function subjectLink(view: MemberView, task: Task): Html {
  return task.lead_id
    ? html`<a href="/console/w/${view.workspace.slug}/leads/${task.lead_id}">the lead</a>`
    : html`<a href="/console/w/${view.workspace.slug}/applications/${task.application_id}">the application</a>`;
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
      options: view.workspace.settings.users.filter((u) => u.active).map((u) => [u.email, u.name]),
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

async function tasksPage(
  services: AppServices,
  view: MemberView,
  query: Query,
  o: { errors?: Record<string, string>; values?: Query } = {},
): Promise<string> {
  allow(view, 'tasks.view');
  const { which, filter, bySubject } = taskFilterOf(services, view, query);
  const tasks = await listConsoleTasks(services.pool, view.workspace.id, filter);
  const csrf = csrfField(view.signedIn.csrf);
  const editable = can(view.role, 'tasks.change');
  const tab = (show: string, label: string) =>
    html`<li>
      <a href="${base(view)}?show=${show}" ${!bySubject && which === show ? html`aria-current="page"` : ''}>${label}</a>
    </li>`;
  const heading = bySubject
    ? `Tasks of this ${filter.leadId ? 'lead' : 'application'}`
    : which === 'mine'
      ? 'My tasks'
      : which === 'overdue'
        ? 'Overdue tasks'
        : 'Every task';
  const errors = o.errors ?? {};
  const create = createSection(view, filter, bySubject, editable, errors, o.values);
  return page(
    view.frame('Tasks', 'Tasks'),
    html`<nav aria-label="Which tasks">
        <ul>
          ${tab('mine', 'Mine')} ${tab('overdue', 'Overdue')} ${tab('all', 'All')}
        </ul>
      </nav>
      ${errors.task ? notice(errors.task, 'alert') : ''}
      ${table({ caption: heading, headings: ['Title', 'For', 'Assignee', 'Due', 'Status', editable && 'Do'], rows: tasks.map((task) => taskRow(view, task, editable, csrf)) })}
      ${tasks.length === 0 ? html`<p>No task here.</p>` : ''} ${create}`,
  );
}

/** Which tasks the page shows: a lead's or an application's, else mine, the overdue ones or all. */
function taskFilterOf(services: AppServices, view: MemberView, query: Query) {
  const which = query.show === 'overdue' || query.show === 'all' ? query.show : 'mine';
  const filter: TaskFilter = {};
  if (UUID.test(query.lead ?? '')) filter.leadId = query.lead;
  if (UUID.test(query.application ?? '')) filter.applicationId = query.application;
  const bySubject = Boolean(filter.leadId || filter.applicationId);
  if (!bySubject && which === 'mine') filter.assigneeId = view.member.id;
  if (which === 'overdue') filter.overdueAt = services.now();
  return { which, filter, bySubject };
}

/** The new-task form, offered on a lead's or an application's tasks only. */
function createSection(
  view: MemberView,
  filter: TaskFilter,
  bySubject: boolean,
  editable: boolean,
  errors: Record<string, string>,
  values: Query | undefined,
) {
  return editable && bySubject
    ? html`<section aria-labelledby="new">
        <h2 id="new">New task</h2>
        ${errors.form ? notice(errors.form, 'alert') : ''}
        ${taskForm(view, base(view), {
          values,
          errors,
          hidden: filter.leadId
            ? html`<input type="hidden" name="lead_id" value="${filter.leadId}" />`
            : html`<input type="hidden" name="application_id" value="${filter.applicationId}" />`,
        })}
      </section>`
    : editable
      ? html`<p>To create a task, open a lead’s or an application’s tasks from its page.</p>`
      : '';
}

function taskRow(
  view: MemberView,
  task: Awaited<ReturnType<typeof listConsoleTasks>>[number],
  editable: boolean,
  csrf: ReturnType<typeof csrfField>,
) {
  return html`<tr>
    <td><a href="${base(view)}/${task.id}">${task.title || '(erased)'}</a></td>
    <td>${subjectLink(view, task)}</td>
    <td>${task.assignee?.name ?? '—'}</td>
    <td>${when(task.due_at, timeZoneOf(view.workspace))}${task.overdue ? html` <strong>(overdue)</strong>` : ''}</td>
    <td>${task.status}</td>
    ${
      editable
        ? html`<td>
            <form
              method="post"
              action="${base(view)}/${task.id}/${task.status === 'open' ? 'complete' : 'reopen'}"
              class="inline"
            >
              ${csrf}
              <button type="submit">
                ${task.status === 'open' ? 'Complete' : 'Reopen'}<span class="visually-hidden"> ${task.title}</span>
              </button>
            </form>
          </td>`
        : ''
    }
  </tr>`;
}

async function taskPage(
  services: AppServices,
  view: MemberView,
  id: string,
  o: { errors?: Record<string, string>; values?: Query; message?: string } = {},
) {
  allow(view, 'tasks.view');
  const task = await findTask(services.pool, view.workspace.id, false, id);
  if (!task) throw new ConsoleRefusal(404, 'There is no such task in this workspace.');
  return page(
    view.frame(task.title || 'Task', 'Tasks'),
    html`${notice(o.message)} ${o.errors?.form ? notice(o.errors.form, 'alert') : ''}
      <p>
        For ${subjectLink(view, task)}; ${task.status}, due
        ${when(task.due_at, timeZoneOf(view.workspace))}${task.overdue ? ' (overdue)' : ''}.
      </p>
      ${can(view.role, 'tasks.change') ? taskForm(view, `${base(view)}/${id}`, { task, values: o.values, errors: o.errors }) : ''}`,
  );
}

/** The form's fields as the task commands take them, or refusals by field. */
function taskInput(view: MemberView, form: Query) {
  const errors: Record<string, string> = {};
  const title = (form.title ?? '').trim();
  if (!title) errors.title = 'Enter a title.';
  const due = momentOf(form.due_at ?? '', timeZoneOf(view.workspace));
  if (typeof due === 'string') errors.due_at = due;
  let assignee = null;
  try {
    assignee = resolveAssignee(view.workspace, form.assignee || null);
  } catch {
    errors.assignee = 'Choose an active member of the workspace.';
  }
  return { errors, title, due: typeof due === 'string' ? undefined : due, assignee };
}

export function registerTaskPages(app: TypedApp, services: AppServices): void {
  app.get('/w/:slug/tasks', async (request, reply) => {
    const view = await memberView(services, request);
    return sendPage(reply, await tasksPage(services, view, request.query as Query));
  });

  app.get('/w/:slug/tasks/:id', async (request, reply) => {
    const view = await memberView(services, request);
    const done = (request.query as Query).done === 'changed' ? 'The task was saved.' : undefined;
    return sendPage(reply, await taskPage(services, view, idParam(request), { message: done }));
  });

  app.post('/w/:slug/tasks', async (request, reply) => {
    const view = await memberView(services, request);
    allow(view, 'tasks.change');
    const form = formOf(request);
    const query = { lead: form.lead_id, application: form.application_id };
    const refuse = async (status: number, errors: Record<string, string>) =>
      sendPage(reply, await tasksPage(services, view, query, { errors, values: form }), status);
    const input = taskInput(view, form);
    if (Object.keys(input.errors).length) return refuse(400, input.errors);
    try {
      const subject = subjectOf({
        lead_id: form.lead_id || undefined,
        application_id: form.application_id || undefined,
      });
      await createTaskCommand(services.store, contextOf(view)(services.now()), {
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
    const back = form.lead_id ? `lead=${form.lead_id}` : `application=${form.application_id}`;
    return reply.redirect(`${base(view)}?${back}`, 303);
  });

  app.post('/w/:slug/tasks/:id', async (request, reply) => {
    const view = await memberView(services, request);
    allow(view, 'tasks.change');
    const id = idParam(request);
    const form = formOf(request);
    const refuse = async (status: number, errors: Record<string, string>) =>
      sendPage(reply, await taskPage(services, view, id, { errors, values: form }), status);
    const input = taskInput(view, form);
    if (Object.keys(input.errors).length) return refuse(400, input.errors);
    try {
      await operateTask(services.store, contextOf(view)(services.now()), id, (now) => ({
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
  });

  const flip = (action: 'complete' | 'reopen') => async (request: FastifyRequest, reply: FastifyReply) => {
    const view = await memberView(services, request);
    allow(view, 'tasks.change');
    const id = idParam(request);
    try {
      await operateTask(services.store, contextOf(view)(services.now()), id, (now) => ({ type: action, now }));
    } catch (error) {
      if (!isCommandError(error)) throw error;
      const refused = refusalErrors(error, {}, 'task');
      return sendPage(reply, await tasksPage(services, view, {}, { errors: refused.errors }), refused.status);
    }
    const referer = request.headers.referer;
    const back =
      referer && new URL(referer).pathname === base(view) ? `${base(view)}${new URL(referer).search}` : base(view);
    return reply.redirect(back, 303);
  };
  app.post('/w/:slug/tasks/:id/complete', flip('complete'));
  app.post('/w/:slug/tasks/:id/reopen', flip('reopen'));
}
