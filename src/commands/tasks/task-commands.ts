import {
  decideCreate,
  decide,
  evolve,
  fold,
  TaskRefusal,
  type TaskAssignee,
  type TaskCommand,
  type TaskEvent,
  type TaskState,
  type TaskSubject,
} from '../../domain/tasks/index.js';
import type { EventStore, StoreTransaction } from '../../events/event-store.js';
import type { CommandContext } from '../../events/types.js';
import { personOfSubject } from '../person-locks.js';
import { taskStream, toTaskEvent } from '../../domain/tasks/index.js';
import { commandHandler, type Handled } from '../command-handler.js';
import { newId } from '../../shared/ids.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { runCommand } from '../run-command.js';

export type TaskResult = Handled<TaskState, TaskEvent>;

/** The assignee named by email: an active user of the workspace; null clears it. */
export function resolveAssignee(workspace: Workspace, email: string | null): TaskAssignee | null {
  if (email === null) return null;
  const user = workspace.settings.users.find((u) => u.email === email.toLowerCase() && u.active && !u.pending);
  if (!user)
    throw new TaskRefusal('invalid', 'validation_failed', 'The assignee must be an active user of the workspace', {
      assignee: 'the email of an active user of the workspace',
    });
  return { user_id: user.id, email: user.email, name: user.name };
}

export interface NewTask {
  subject: TaskSubject;
  title: string;
  assignee: TaskAssignee | null;
  due_at: Date;
}

/** Creates a task on a lead or an application; its timer is armed by the projection in the same transaction. */
export async function createTask(store: EventStore, context: CommandContext, input: NewTask): Promise<TaskState> {
  const id = newId(context.now.getTime());
  return runCommand(store, context, [taskStream(id)], (tx) => createTaskIn(tx, id, input));
}

/** The creation inside a transaction (the single form's and each item of a bulk action's). */
export async function createTaskIn(tx: StoreTransaction, id: string, input: NewTask): Promise<TaskState> {
  const person = await personOfSubject(tx, input.subject);
  const events = decideCreate({ task_id: id, ...input, now: tx.context.now, person_id: person });
  await tx.append(taskStream(id), 'no_stream', events);
  return fold(events)!;
}

const tasks = commandHandler<TaskState, TaskEvent, TaskCommand>({
  name: 'task',
  stream: taskStream,
  read: toTaskEvent,
  evolve,
  decide,
});

/** Reads and folds a task's stream inside the transaction; not found when unknown, another tenant's or the other mode's. */
export const loadTask = tasks.load;

/** Runs one command on a task: load, decide, append. */
export const handleTaskCommand = tasks.handle;
