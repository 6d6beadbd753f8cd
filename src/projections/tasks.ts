import { idOfStream } from '../domain/streams.js';
import {
  TASK_EVENT_TYPES,
  toTaskEvent,
  evolve,
  taskView,
  timerDue,
  type Task,
  type TaskState,
} from '../domain/tasks/index.js';
import type { Queryable } from '../storage/postgres.js';
import { loadStates, newAndStored, noRow, type FoldedRow, type FoldProjection, type FoldWriter } from './fold.js';

const CREATED = 'task.created';

/** The `tasks` read model (each task's state and public Task) and `task_timers`, the durable overdue timers. */
export const tasksProjection: FoldProjection<TaskState> = {
  name: 'tasks',
  tables: ['tasks', 'task_timers'],
  eventTypes: TASK_EVENT_TYPES,
  rowOf: (event) => idOfStream('task', event.streamId),
  creates: (event) => event.type === CREATED,
  replaces: (event) => event.type === CREATED,
  load: (sql, rows) => loadStates<TaskState>(sql, 'tasks', 'state', rows),
  evolve(state, event) {
    if (state === undefined && event.type !== CREATED) throw noRow(event);
    return evolve(state, toTaskEvent(event));
  },
  write(sql: FoldWriter, rows: readonly FoldedRow<TaskState>[]): void {
    const { inserts, updates } = newAndStored(rows);
    if (inserts.length > 0) insertTasks(sql, inserts);
    if (updates.length > 0) updateTasks(sql, updates);
    syncTimers(sql, rows);
  },
};

function insertTasks(sql: FoldWriter, rows: readonly FoldedRow<TaskState>[]): void {
  sql.send(
    `INSERT INTO tasks (id, tenant_id, sandbox, lead_id, application_id, state, body, revision, due_at, created_at, updated_at)
     SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::boolean[], $4::uuid[], $5::uuid[], $6::jsonb[], $7::jsonb[],
                          $8::integer[], $9::timestamptz[], $10::timestamptz[], $11::timestamptz[])`,
    [
      rows.map((r) => r.state.id),
      rows.map((r) => r.tenantId),
      rows.map((r) => r.sandbox),
      rows.map((r) => r.state.subject.lead_id),
      rows.map((r) => r.state.subject.application_id),
      rows.map((r) => JSON.stringify(r.state)),
      rows.map((r) => JSON.stringify(taskView(r.state))),
      rows.map((r) => r.revision),
      rows.map((r) => r.state.due_at),
      rows.map((r) => r.firstAt),
      rows.map((r) => r.lastAt),
    ],
    rows,
  );
}

function updateTasks(sql: FoldWriter, rows: readonly FoldedRow<TaskState>[]): void {
  sql.send(
    `UPDATE tasks AS t SET state = v.state, body = v.body, revision = v.revision, due_at = v.due_at, updated_at = v.updated_at
       FROM unnest($1::uuid[], $2::uuid[], $3::jsonb[], $4::jsonb[], $5::integer[], $6::timestamptz[], $7::timestamptz[])
            AS v(id, tenant_id, state, body, revision, due_at, updated_at)
      WHERE t.id = v.id AND t.tenant_id = v.tenant_id`,
    [
      rows.map((r) => r.id),
      rows.map((r) => r.tenantId),
      rows.map((r) => JSON.stringify(r.state)),
      rows.map((r) => JSON.stringify(taskView(r.state))),
      rows.map((r) => r.revision),
      rows.map((r) => r.state.due_at),
      rows.map((r) => r.lastAt),
    ],
    rows,
  );
}

/** Arms, moves or disarms each task's durable timer to match its state. */
function syncTimers(sql: FoldWriter, rows: readonly FoldedRow<TaskState>[]): void {
  const armed = rows.flatMap((r) => {
    const due = timerDue(r.state);
    return due === null ? [] : [{ row: r, due }];
  });
  const disarmed = rows.filter((r) => timerDue(r.state) === null);
  if (disarmed.length > 0)
    sql.send(
      `DELETE FROM task_timers AS t USING unnest($1::uuid[], $2::uuid[]) AS v(id, tenant_id)
        WHERE t.task_id = v.id AND t.tenant_id = v.tenant_id`,
      [disarmed.map((r) => r.state.id), disarmed.map((r) => r.tenantId)],
      disarmed,
    );
  if (armed.length > 0)
    sql.send(
      `INSERT INTO task_timers (task_id, tenant_id, sandbox, due_at)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::boolean[], $4::timestamptz[])
       ON CONFLICT (task_id) DO UPDATE SET due_at = EXCLUDED.due_at WHERE task_timers.tenant_id = EXCLUDED.tenant_id`,
      [
        armed.map((a) => a.row.state.id),
        armed.map((a) => a.row.tenantId),
        armed.map((a) => a.row.sandbox),
        armed.map((a) => a.due),
      ],
      armed.map((a) => a.row),
    );
}

/** One task of a tenant in one mode; undefined for another tenant's, the other mode's or an unknown id. */
export async function findTask(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  id: string,
): Promise<Task | undefined> {
  const result = await sql.query<{ body: Task }>(
    'SELECT body FROM tasks WHERE id = $1 AND tenant_id = $2 AND sandbox = $3',
    [id, tenantId, sandbox],
  );
  return result.rows[0]?.body;
}

/** The tasks of a lead or an application, by due time. */
export async function listTasks(
  sql: Queryable,
  tenantId: string,
  sandbox: boolean,
  subject: { lead_id?: string; application_id?: string },
): Promise<Task[]> {
  const result = await sql.query<{ body: Task }>(
    `SELECT body FROM tasks
      WHERE tenant_id = $1 AND sandbox = $2
        AND ($3::uuid IS NULL OR lead_id = $3) AND ($4::uuid IS NULL OR application_id = $4)
      ORDER BY due_at, id LIMIT 500`,
    [tenantId, sandbox, subject.lead_id ?? null, subject.application_id ?? null],
  );
  return result.rows.map((r) => r.body);
}
