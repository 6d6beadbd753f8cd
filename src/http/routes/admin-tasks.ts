import type { FastifyRequest } from 'fastify';
import { createTask, handleTaskCommand, resolveAssignee } from '../../commands/tasks/task-commands.js';
import { subjectOf } from '../../commands/subject.js';
import { taskView } from '../../domain/tasks/index.js';
import { findTask, listTasks } from '../../projections/tasks.js';
import { staffScope } from '../admin-auth.js';
import { notFound } from '../errors.js';
import { ModeQuery } from '../../schemas/application.js';
import { adminErrorResponses, AdminWorkspaceParams } from '../schemas/admin.js';
import { answer } from '../schemas/error.js';
import { ChangeTaskBody, CreateTaskBody, Task, TaskList, TaskListQuery, TaskParams } from '../schemas/task.js';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../typed-app.js';

/** Under the admin interface's prefix (/admin/v1, src/http/routes/admin.ts). */
const BASE = '/workspaces/:workspace/tasks';
const ERRORS = adminErrorResponses(400, 401, 403, 404);
const TAGS = ['tasks'];

/**
 * The workspace UI's operations on tasks, for staff. A task's due time arms a durable timer: task.overdue is sent
 * once when it passes while the task is open. Live data unless `?sandbox=true`.
 */
export function registerAdminTaskRoutes(app: TypedApp, services: AppServices): void {
  registerCreateTask(app, services);
  registerListTasks(app, services);
  registerGetTask(app, services);
  registerChangeTask(app, services);
  registerCompleteAndReopen(app, services);
}

function staff(services: AppServices, request: FastifyRequest, sandbox: boolean | undefined) {
  return staffScope(request, sandbox, services.now());
}

/** POST …/tasks */
function registerCreateTask(app: TypedApp, services: AppServices): void {
  app.post(
    BASE,
    {
      schema: {
        tags: TAGS,
        operationId: 'createTask',
        summary: 'Create a task for a lead or an application (title, assignee, due time)',
        params: AdminWorkspaceParams,
        querystring: ModeQuery,
        body: CreateTaskBody,
        response: { 201: answer(Task, 'The task created'), ...ERRORS },
      },
    },
    async (request, reply) => {
      const { workspace, context } = staff(services, request, request.query.sandbox);
      const body = request.body;
      const state = await createTask(services.store, context, {
        subject: subjectOf({ lead_id: body.lead_id, application_id: body.application_id }),
        title: body.title,
        assignee: resolveAssignee(workspace, body.assignee ?? null),
        due_at: new Date(body.due_at),
      });
      return reply.status(201).send(taskView(state));
    },
  );
}

/** GET …/tasks */
function registerListTasks(app: TypedApp, services: AppServices): void {
  app.get(
    BASE,
    {
      schema: {
        tags: TAGS,
        operationId: 'listTasks',
        summary: 'List the tasks of a lead or an application (or all), by due time',
        params: AdminWorkspaceParams,
        querystring: TaskListQuery,
        response: { 200: answer(TaskList, 'The tasks'), ...ERRORS },
      },
    },
    async (request) => {
      const { workspace, sandbox } = staff(services, request, request.query.sandbox);
      const { lead_id, application_id } = request.query;
      return { data: await listTasks(services.pool, workspace.id, sandbox, { lead_id, application_id }) };
    },
  );
}

/** GET …/tasks/{id} */
function registerGetTask(app: TypedApp, services: AppServices): void {
  app.get(
    `${BASE}/:id`,
    {
      schema: {
        tags: TAGS,
        operationId: 'getTask',
        summary: 'Read a task',
        params: TaskParams,
        querystring: ModeQuery,
        response: { 200: answer(Task, 'The task'), ...ERRORS },
      },
    },
    async (request) => {
      const { workspace, sandbox } = staff(services, request, request.query.sandbox);
      const task = await findTask(services.pool, workspace.id, sandbox, request.params.id);
      if (!task) throw notFound('task');
      return task;
    },
  );
}

/** PATCH …/tasks/{id} */
function registerChangeTask(app: TypedApp, services: AppServices): void {
  app.patch(
    `${BASE}/:id`,
    {
      schema: {
        tags: TAGS,
        operationId: 'changeTask',
        summary: 'Change the title, assignee or due time (a new due time re-arms task.overdue)',
        params: TaskParams,
        querystring: ModeQuery,
        body: ChangeTaskBody,
        response: { 200: answer(Task, 'The task after the change'), ...ERRORS },
      },
    },
    async (request) => {
      const { workspace, context } = staff(services, request, request.query.sandbox);
      const { title, assignee, due_at } = request.body;
      const resolved = assignee === undefined ? undefined : resolveAssignee(workspace, assignee);
      const dueAt = due_at === undefined ? undefined : new Date(due_at);
      const { state } = await handleTaskCommand(services.store, context, request.params.id, (now) => ({
        type: 'change',
        now,
        ...(title !== undefined ? { title } : {}),
        ...(resolved !== undefined ? { assignee: resolved } : {}),
        ...(dueAt !== undefined ? { due_at: dueAt } : {}),
      }));
      return taskView(state);
    },
  );
}

/** POST …/tasks/{id}/complete and /reopen: one route each, from a table. */
function registerCompleteAndReopen(app: TypedApp, services: AppServices): void {
  for (const [action, operationId, summary] of [
    ['complete', 'completeTask', 'Complete a task (before its due time: no task.overdue)'],
    [
      'reopen',
      'reopenTask',
      'Reopen a completed task (its timer is armed again unless task.overdue was sent for its due time)',
    ],
  ] as const) {
    app.post(
      `${BASE}/:id/${action}`,
      {
        schema: {
          tags: TAGS,
          operationId,
          summary,
          params: TaskParams,
          querystring: ModeQuery,
          response: { 200: answer(Task, 'The task after the operation'), ...ERRORS },
        },
      },
      async (request) => {
        const { context } = staff(services, request, request.query.sandbox);
        const { state } = await handleTaskCommand(services.store, context, request.params.id, (now) => ({
          type: action,
          now,
        }));
        return taskView(state);
      },
    );
  }
}
