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
import { lockPersonOfStream, personOfSubject } from '../subject.js';
import { taskStream } from '../../domain/tasks/index.js';
import { toTaskEvent } from '../../projections/tasks.js';
import { newId } from '../../shared/ids.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { NotFoundError } from '../errors.js';
import { runCommand } from '../run-command.js';

export interface TaskResult {
  state: TaskState;
  /** The events the operation appended, in order; empty when it changed nothing. */
  events: TaskEvent[];
}

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
export async function createTaskCommand(
  store: EventStore,
  context: CommandContext,
  input: NewTask,
): Promise<TaskState> {
  const id = newId(context.now.getTime());
  const stream = taskStream(id);
  return runCommand(store, context, [stream], async (tx) => {
    const person = await personOfSubject(tx, input.subject);
    const events = decideCreate({ task_id: id, ...input, now: tx.context.now, person_id: person });
    await tx.append(stream, 'no_stream', events);
    return fold(events)!;
  });
}

/** Reads and folds a task's stream inside the transaction; not found when unknown, another tenant's or the other mode's. */
export async function loadTask(tx: StoreTransaction, id: string): Promise<{ state: TaskState; revision: number }> {
  const events = await tx.readStream(taskStream(id));
  const first = events[0];
  if (!first || first.tenantId !== tx.context.tenantId || first.sandbox !== tx.context.sandbox)
    throw new NotFoundError('task');
  return { state: fold(events.map(toTaskEvent))!, revision: events[events.length - 1]!.revision };
}

/** Runs one operation on a task: load, decide, append. */
export async function operateTask(
  store: EventStore,
  context: CommandContext,
  id: string,
  command: (now: Date) => TaskCommand,
): Promise<TaskResult> {
  const stream = taskStream(id);
  return runCommand(store, context, [stream], async (tx) => {
    await lockPersonOfStream(tx, stream);
    const { state, revision } = await loadTask(tx, id);
    const events = decide(state, command(tx.context.now));
    await tx.append(stream, revision, events);
    return { state: events.reduce<TaskState>((s, e) => evolve(s, e), state), events };
  });
}
