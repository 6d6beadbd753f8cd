import type { Task } from '../../../http/schemas/task.js';
import { html } from '../../html.js';
import { when } from '../../time.js';
import { csvTime } from '../cells.js';
import { textColumn, timeColumn } from '../cells.js';
import type { ListContext, ListSpec, Query } from '../spec.js';
import { FilterSteps, UUID } from './shared.js';
import { subjectCell, subjectJoins, subjectPerson, subjectSelect } from './subject.js';

export interface TaskRow {
  id: string;
  body: Task;
  /** The person's name for a lead's task; the case number and the person's name for an application's. */
  subject: string;
}

export const TASK_FILTERS = ['show', 'status', 'lead', 'application'] as const;
export const TASK_SHOWS = ['mine', 'overdue', 'all'] as const;

/** Whose tasks (mine by default, overdue, all), open or done, of one lead or application. */
export function taskFilter(query: Query, ctx: ListContext): FilterSteps {
  const f = new FilterSteps();
  const show = query.show ?? 'mine';
  const bySubject = UUID.test(query.lead ?? '') || UUID.test(query.application ?? '');
  if (!(TASK_SHOWS as readonly string[]).includes(show)) f.errors.show = 'Choose one of the options.';
  else if (show === 'mine' && !bySubject)
    f.step((w) => w.add((n) => `t.body->'assignee'->>'user_id' = ${n}`, ctx.view.member.id));
  else if (show === 'overdue') f.step((w) => w.add((n) => `t.body->>'status' = 'open' AND t.due_at < ${n}`, ctx.now));
  if (query.status === 'open') f.step((w) => w.when(`t.body->>'status' = 'open'`));
  else if (query.status === 'done') f.step((w) => w.when(`t.body->>'status' = 'completed'`));
  else if (query.status) f.errors.status = 'Choose one of the options.';
  for (const [name, column] of [
    ['lead', 't.lead_id'],
    ['application', 't.application_id'],
  ] as const) {
    const id = query[name];
    if (id && UUID.test(id)) f.step((w) => w.add((n) => `${column} = ${n}::uuid`, id));
    else if (id) f.errors[name] = 'This is not the id of a record.';
  }
  return f;
}

const statusWords = (t: Task) => t.status;

export const TASKS: ListSpec<TaskRow> = {
  name: 'tasks',
  title: 'Tasks',
  noun: { one: 'task', many: 'tasks' },
  view: 'tasks.view',
  from: `tasks t ${subjectJoins('t')}`,
  select: `t.id, t.body, ${subjectSelect('t')} AS subject`,
  scope: ['t.tenant_id = $1', 't.sandbox = false'],
  id: { sql: 't.id', type: 'uuid' },
  person: subjectPerson('t'),
  defaultSort: { key: 'due', dir: 'asc' },
  filterNames: TASK_FILTERS,
  filter: taskFilter,
  rowId: (r) => r.id,
  rowName: (r) => r.body.title || 'an erased task',
  bulk: [{ action: 'assign', label: 'Assign to a member', operation: 'tasks.change' }],
  columns: [
    {
      key: 'title',
      label: 'Title',
      sort: { sql: `lower(coalesce(t.body->>'title', ''))`, type: 'text' },
      cell: (r, ctx) =>
        html`<a href="/console/w/${ctx.view.workspace.slug}/tasks/${r.id}">${r.body.title || '(erased)'}</a>`,
      text: (r) => r.body.title,
    },
    {
      key: 'for',
      label: 'For',
      cell: (r, ctx) => subjectCell(ctx, r.body, r.subject),
      text: (r) => r.subject,
    },
    textColumn<TaskRow>(
      'assignee',
      'Assignee',
      (r) => r.body.assignee?.name,
      `coalesce(t.body->'assignee'->>'name', '')`,
    ),
    {
      ...timeColumn<TaskRow>('due', 'Due', 't.due_at', (r) => r.body.due_at),
      cell: (r, ctx) =>
        html`${when(r.body.due_at, ctx.zone)}${r.body.status === 'open' && new Date(r.body.due_at) < ctx.now ? html` <strong>(overdue)</strong>` : ''}`,
      text: (r, ctx) => csvTime(r.body.due_at, ctx.zone),
    },
    textColumn<TaskRow>('status', 'Status', (r) => statusWords(r.body), `coalesce(t.body->>'status', '')`),
    timeColumn<TaskRow>('created', 'Created', 't.created_at', (r) => r.body.created_at),
  ],
};
