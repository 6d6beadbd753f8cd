import { evolve, taskView, timerDue } from './evolve.js';
import {
  TaskRefusal,
  type CreateTaskInput,
  type TaskAssignee,
  type TaskCommand,
  type TaskEvent,
  type TaskState,
} from './types.js';

export const TITLE_MAX = 200;

function checkedTitle(title: string): string {
  const trimmed = title.trim();
  if (trimmed.length === 0 || trimmed.length > TITLE_MAX)
    throw new TaskRefusal('invalid', 'validation_failed', `A task's title is 1 to ${TITLE_MAX} characters`, {
      title: `1 to ${TITLE_MAX} characters`,
    });
  return trimmed;
}

function checkedTime(at: Date): string {
  if (Number.isNaN(at.getTime()))
    throw new TaskRefusal('invalid', 'validation_failed', 'due_at is not a date-time', { due_at: 'a date-time' });
  return at.toISOString();
}

const sameAssignee = (a: TaskAssignee | null, b: TaskAssignee | null) => (a?.user_id ?? null) === (b?.user_id ?? null);

/** The event that creates a task. A due time already past is allowed: the timer then announces it at once. */
export function decideCreate(input: CreateTaskInput): TaskEvent[] {
  return [
    {
      type: 'task.created',
      data: {
        task_id: input.task_id,
        lead_id: input.subject.lead_id,
        application_id: input.subject.application_id,
        title: checkedTitle(input.title),
        assignee: input.assignee,
        due_at: checkedTime(input.due_at),
        created_at: input.now.toISOString(),
        person_id: input.person_id,
      },
    },
  ];
}

/**
 * What a command on a task appends. Repeating a state (completing a completed task, reopening an open one, a change
 * that changes nothing) appends nothing. task.overdue is appended at most once per due time: only while the task is
 * open, its due time has passed, and no task.overdue was appended for that due time.
 */
export function decide(state: TaskState, command: TaskCommand): TaskEvent[] {
  switch (command.type) {
    case 'change': {
      const next = {
        title: command.title === undefined ? state.title : checkedTitle(command.title),
        assignee: command.assignee === undefined ? state.assignee : command.assignee,
        due_at: command.due_at === undefined ? state.due_at : checkedTime(command.due_at),
      };
      if (next.title === state.title && next.due_at === state.due_at && sameAssignee(next.assignee, state.assignee))
        return [];
      return [{ type: 'task.changed', data: { ...next, changed_at: command.now.toISOString() } }];
    }
    case 'complete':
      return state.status === 'completed'
        ? []
        : [{ type: 'task.completed', data: { completed_at: command.now.toISOString() } }];
    case 'reopen':
      return state.status === 'open'
        ? []
        : [{ type: 'task.reopened', data: { reopened_at: command.now.toISOString() } }];
    case 'mark_overdue': {
      const due = timerDue(state);
      if (due === null || new Date(due).getTime() > command.now.getTime()) return [];
      const facts = { due_at: due };
      const after = evolve(state, { type: 'task.overdue', data: facts });
      return [{ type: 'task.overdue', data: { ...facts, payload: taskView(after) } }];
    }
    default: {
      const unknown: never = command;
      throw new Error(`unknown task command ${JSON.stringify(unknown)}`);
    }
  }
}
