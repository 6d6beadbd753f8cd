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
import type { RecordedEvent } from '../events/types.js';
import type { Queryable, Writer } from '../storage/postgres.js';
import type { Projection } from './projection.js';

/** Arms, moves or disarms the task's durable timer to match its state. */
function syncTimer(sql: Writer, stored: RecordedEvent, state: TaskState): void {
  const due = timerDue(state);
  if (due === null) {
    sql.send('DELETE FROM task_timers WHERE task_id = $1 AND tenant_id = $2', [state.id, stored.tenantId]);
    return;
  }
  sql.send(
    `INSERT INTO task_timers (task_id, tenant_id, sandbox, due_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (task_id) DO UPDATE SET due_at = EXCLUDED.due_at WHERE task_timers.tenant_id = EXCLUDED.tenant_id`,
    [state.id, stored.tenantId, stored.sandbox, due],
  );
}

/** The `tasks` read model (each task's state and public Task) and `task_timers`, the durable overdue timers. */
export const tasksProjection: Projection = {
  name: 'tasks',
  tables: ['tasks', 'task_timers'],
  eventTypes: TASK_EVENT_TYPES,
  async apply(sql: Writer, stored: RecordedEvent): Promise<void> {
    const event = toTaskEvent(stored);
    let state: TaskState;
    if (event.type === 'task.created') {
      state = evolve(undefined, event);
      sql.send(
        `INSERT INTO tasks (id, tenant_id, sandbox, lead_id, application_id, state, body, revision, due_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
        [
          state.id,
          stored.tenantId,
          stored.sandbox,
          state.subject.lead_id,
          state.subject.application_id,
          JSON.stringify(state),
          JSON.stringify(taskView(state)),
          stored.revision,
          state.due_at,
          stored.createdAt,
        ],
      );
    } else {
      const id = idOfStream('task', stored.streamId);
      const row = (
        await sql.query<{ state: TaskState }>('SELECT state FROM tasks WHERE id = $1 AND tenant_id = $2 FOR UPDATE', [
          id,
          stored.tenantId,
        ])
      ).rows[0];
      if (!row) throw new Error(`No read-model row for ${stored.streamId}`);
      state = evolve(row.state, event);
      sql.send(
        'UPDATE tasks SET state = $2, body = $3, revision = $4, due_at = $5, updated_at = $6 WHERE id = $1 AND tenant_id = $7',
        [
          id,
          JSON.stringify(state),
          JSON.stringify(taskView(state)),
          stored.revision,
          state.due_at,
          stored.createdAt,
          stored.tenantId,
        ],
      );
    }
    syncTimer(sql, stored, state);
  },
};

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
