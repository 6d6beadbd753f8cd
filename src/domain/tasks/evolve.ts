import type { Task, TaskEvent, TaskState } from './types.js';
import type { WithoutPayload } from '../facts.js';

/** An event's facts, what the state is built from (the overdue event's payload is ignored). */
export type TaskFact = WithoutPayload<TaskEvent>;

/** Folds one event into the task. */
export function evolve(state: TaskState | undefined, event: TaskFact): TaskState {
  if (event.type === 'task.created') {
    const d = event.data;
    return {
      id: d.task_id,
      subject:
        d.lead_id !== null
          ? { lead_id: d.lead_id, application_id: null }
          : { lead_id: null, application_id: d.application_id! },
      title: d.title,
      assignee: d.assignee,
      due_at: d.due_at,
      status: 'open',
      overdue_for: null,
      created_at: d.created_at,
      updated_at: d.created_at,
      completed_at: null,
    };
  }
  if (!state) throw new Error(`${event.type} before task.created`);
  switch (event.type) {
    case 'task.changed':
      return {
        ...state,
        title: event.data.title,
        assignee: event.data.assignee,
        due_at: event.data.due_at,
        updated_at: event.data.changed_at,
      };
    case 'task.completed':
      return {
        ...state,
        status: 'completed',
        completed_at: event.data.completed_at,
        updated_at: event.data.completed_at,
      };
    case 'task.reopened':
      return { ...state, status: 'open', completed_at: null, updated_at: event.data.reopened_at };
    case 'task.overdue':
      return { ...state, overdue_for: event.data.due_at };
    default: {
      const unknown: never = event;
      throw new Error(`unknown task event ${JSON.stringify(unknown)}`);
    }
  }
}

export function fold(events: readonly TaskFact[]): TaskState | undefined {
  return events.reduce<TaskState | undefined>((state, event) => evolve(state, event), undefined);
}

/** The public Task of a state. */
export function taskView(state: TaskState): Task {
  return {
    id: state.id,
    lead_id: state.subject.lead_id,
    application_id: state.subject.application_id,
    title: state.title,
    assignee: state.assignee,
    due_at: state.due_at,
    status: state.status,
    overdue: state.status === 'open' && state.overdue_for === state.due_at,
    created_at: state.created_at,
    updated_at: state.updated_at,
    completed_at: state.completed_at,
  };
}

/** When the durable timer must fire for this task: its due time while open and not yet announced for it; else null. */
export function timerDue(state: TaskState): string | null {
  return state.status === 'open' && state.overdue_for !== state.due_at ? state.due_at : null;
}
