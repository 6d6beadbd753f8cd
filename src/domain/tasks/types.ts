import { eventReader, eventTypes } from '../event-types.js';
import { Refusal } from '../refusal.js';

/** The task aggregate: a to-do for staff on a lead or an application, with a due time that raises task.overdue. */

export const TASK_STATUSES = ['open', 'completed'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** The staff member a task is assigned to, as the workspace knew them when it was assigned. */
export interface TaskAssignee {
  user_id: string;
  email: string;
  name: string;
}

/** What a task is about: a lead or an application of the same workspace and mode (exactly one of them). */
export type TaskSubject = { lead_id: string; application_id: null } | { lead_id: null; application_id: string };

export interface TaskState {
  id: string;
  subject: TaskSubject;
  title: string;
  assignee: TaskAssignee | null;
  /** ISO 8601, UTC. */
  due_at: string;
  status: TaskStatus;
  /** The due time task.overdue was emitted for; null while none was. A new due time re-arms the timer. */
  overdue_for: string | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}

/** The public Task: the admin interface's answer and the `data` of task.overdue. */
export interface Task {
  id: string;
  lead_id: string | null;
  application_id: string | null;
  title: string;
  assignee: TaskAssignee | null;
  due_at: string;
  status: TaskStatus;
  /** True while the task is open and past the due time task.overdue was emitted for. */
  overdue: boolean;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}

export interface TaskCreated {
  type: 'task.created';
  data: {
    task_id: string;
    lead_id: string | null;
    application_id: string | null;
    title: string;
    assignee: TaskAssignee | null;
    due_at: string;
    created_at: string;
    /**
     * The lead whose person this belongs to (an application's lead for an application's): the stream's data key is
     * filed under them, so erasing the person erases its personal values too. Absent in events written before erasure
     * existed.
     */
    person_id?: string;
  };
}
/** Internal: title, assignee or due time changed (every value after the change). */
export interface TaskChanged {
  type: 'task.changed';
  data: { title: string; assignee: TaskAssignee | null; due_at: string; changed_at: string };
}
export interface TaskCompleted {
  type: 'task.completed';
  data: { completed_at: string };
}
export interface TaskReopened {
  type: 'task.reopened';
  data: { reopened_at: string };
}
/** The webhook event: `payload` is the Task as it is once overdue. */
export interface TaskOverdue {
  type: 'task.overdue';
  data: { due_at: string; payload: Task };
}

export type TaskEvent = TaskCreated | TaskChanged | TaskCompleted | TaskReopened | TaskOverdue;

/** Every type of TaskEvent, once: the compiler names a type missing here (src/domain/event-types.ts). */
export const TASK_EVENT_TYPES = eventTypes<TaskEvent>({
  'task.created': 'task.created',
  'task.changed': 'task.changed',
  'task.completed': 'task.completed',
  'task.reopened': 'task.reopened',
  'task.overdue': 'task.overdue',
});

/** A stored event of a task stream as the domain's event type. */
export const toTaskEvent = eventReader<TaskEvent>(TASK_EVENT_TYPES, 'a task');

export interface CreateTaskInput {
  task_id: string;
  subject: TaskSubject;
  title: string;
  assignee: TaskAssignee | null;
  due_at: Date;
  now: Date;
  /** The lead of the task's person (see TaskCreated). */
  person_id: string;
}

export type TaskCommand =
  | { type: 'change'; title?: string; assignee?: TaskAssignee | null; due_at?: Date; now: Date }
  | { type: 'complete'; now: Date }
  | { type: 'reopen'; now: Date }
  /** The durable timer's: the due time has passed by `now`. */
  | { type: 'mark_overdue'; now: Date };

/** A task operation the task refuses: the status and code the caller sees. */
export class TaskRefusal extends Refusal {}
