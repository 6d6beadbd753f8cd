import type { Command } from 'commander';
import { createTask, handleTaskCommand, resolveAssignee } from '../../commands/tasks/task-commands.js';
import { taskView, type Task, type TaskCommand, type TaskSubject } from '../../domain/tasks/index.js';
import { findTask, listTasks } from '../../projections/tasks.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { staffOptions, withStaff, type StaffOptions } from '../staff.js';
import { requireWorkspace, withServices } from '../context.js';
import { CliError, notFoundIn, output, table } from '../output.js';

function describe(task: Task): string {
  return [
    `${task.title}  (${task.id})`,
    `for ${task.lead_id ? `lead ${task.lead_id}` : `application ${task.application_id}`}`,
    `due ${task.due_at}; ${task.status}${task.overdue ? ', overdue' : ''}${task.completed_at ? ` at ${task.completed_at}` : ''}`,
    `assignee ${task.assignee ? `${task.assignee.name} <${task.assignee.email}>` : '-'}`,
  ].join('\n');
}

function dueTime(value: string): Date {
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw new CliError(`--due must be a date-time (ISO 8601), not ${value}`);
  return at;
}

/** `visa-crm task …`: the workspace UI's task operations. */
export function registerTaskVerbs(program: Command, json: () => boolean): void {
  const task = program.command('task').description('tasks for staff on leads and applications (task.overdue when due)');
  const print = (view: Task) => output(json(), view, () => describe(view));

  staffOptions(
    task
      .command('create <workspace>')
      .description('create a task for a lead or an application')
      .option('--lead <leadId>', 'the lead the task is for')
      .option('--application <applicationId>', 'the application the task is for')
      .requiredOption('--title <title>', 'what is to be done')
      .requiredOption('--due <dateTime>', 'the due time (ISO 8601); task.overdue is sent once it passes while open')
      .option('--assignee <email>', 'an active user of the workspace'),
  ).action(
    async (
      ws: string,
      o: StaffOptions & { lead?: string; application?: string; title: string; due: string; assignee?: string },
    ) => {
      if (Boolean(o.lead) === Boolean(o.application))
        throw new CliError('Name exactly one of --lead and --application');
      const subject: TaskSubject = o.lead
        ? { lead_id: o.lead, application_id: null }
        : { lead_id: null, application_id: o.application! };
      const due = dueTime(o.due);
      print(
        await withStaff(ws, o, async (s, workspace, context) =>
          taskView(
            await createTask(s.store, context, {
              subject,
              title: o.title,
              assignee: resolveAssignee(workspace, o.assignee ?? null),
              due_at: due,
            }),
          ),
        ),
      );
    },
  );

  task
    .command('show <workspace> <taskId>')
    .option('--sandbox', 'read sandbox (test-mode) data')
    .description('show a task')
    .action(async (ws: string, id: string, o: { sandbox?: boolean }) => {
      const view = await withServices(async (s) => {
        const workspace = await requireWorkspace(s, ws);
        const found = await findTask(s.pool, workspace.id, o.sandbox ?? false, id);
        if (!found) throw notFoundIn('task', id, workspace, o.sandbox);
        return found;
      });
      print(view);
    });

  task
    .command('list <workspace>')
    .option('--lead <leadId>', "only this lead's tasks")
    .option('--application <applicationId>', "only this application's tasks")
    .option('--sandbox', 'read sandbox (test-mode) data')
    .description('list tasks by due time')
    .action(async (ws: string, o: { lead?: string; application?: string; sandbox?: boolean }) => {
      const tasks = await withServices(async (s) => {
        const workspace = await requireWorkspace(s, ws);
        return listTasks(s.pool, workspace.id, o.sandbox ?? false, { lead_id: o.lead, application_id: o.application });
      });
      output(json(), { data: tasks }, () =>
        table(
          tasks.map((t) => ({
            ...t,
            for: t.lead_id ? `lead ${t.lead_id}` : `application ${t.application_id}`,
            assignee: t.assignee?.email,
          })),
          ['id', 'title', 'due_at', 'status', 'overdue', 'assignee', 'for'],
        ),
      );
    });

  const operation = (
    name: string,
    description: string,
    build: (o: Record<string, unknown>, ws: Workspace, now: Date) => TaskCommand,
    extra: (c: Command) => Command = (c) => c,
  ) =>
    extra(staffOptions(task.command(`${name} <workspace> <taskId>`).description(description))).action(
      async (ws: string, id: string, o: StaffOptions & Record<string, unknown>) => {
        print(
          await withStaff(ws, o, async (s, workspace, context) =>
            taskView((await handleTaskCommand(s.store, context, id, (now) => build(o, workspace, now))).state),
          ),
        );
      },
    );

  operation(
    'change',
    'change the title, assignee or due time (a new due time re-arms task.overdue)',
    (o, workspace, now) => ({
      type: 'change',
      now,
      ...(typeof o.title === 'string' ? { title: o.title } : {}),
      ...(typeof o.due === 'string' ? { due_at: dueTime(o.due) } : {}),
      ...(o.unassign
        ? { assignee: null }
        : typeof o.assignee === 'string'
          ? { assignee: resolveAssignee(workspace, o.assignee) }
          : {}),
    }),
    (c) =>
      c
        .option('--title <title>', 'a new title')
        .option('--due <dateTime>', 'a new due time (ISO 8601)')
        .option('--assignee <email>', 'assign to this active user')
        .option('--unassign', 'assign to nobody'),
  );
  operation('complete', 'complete a task (before its due time: no task.overdue)', (_o, _ws, now) => ({
    type: 'complete',
    now,
  }));
  operation('reopen', 'reopen a completed task', (_o, _ws, now) => ({ type: 'reopen', now }));
}
