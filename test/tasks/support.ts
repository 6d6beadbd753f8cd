import type { Test } from 'tap';
import type pg from 'pg';
import type { Task } from '../../src/domain/tasks/index.js';
import type { StoredEvent } from '../../src/events/types.js';
import { TestClock } from '../support/app.js';
import { appFixture, type AppFixture } from '../applications/support.js';

export interface TaskFixture extends AppFixture {
  clock: TestClock;
  /** Creates a task through the admin interface; fails the test on anything but 201. */
  createTask(body: Record<string, unknown>, sandbox?: boolean): Promise<Task>;
  taskEvents(id: string): Promise<StoredEvent[]>;
  overdueCount(id: string): Promise<number>;
}

export async function taskFixture(t: Test): Promise<TaskFixture> {
  const clock = new TestClock();
  const f = await appFixture(t, {}, { now: clock.now });
  const taskEvents = (id: string) => f.app.services.store.readStream(`task-${id}`);
  return {
    ...f,
    clock,
    async createTask(body, sandbox = false) {
      const response = await f.admin('/tasks', { method: 'POST', json: body, sandbox });
      if (response.status !== 201) throw new Error(`POST /tasks answered ${response.status}: ${await response.text()}`);
      return (await response.json()) as Task;
    },
    taskEvents,
    async overdueCount(id) {
      return (await taskEvents(id)).filter((e) => e.type === 'task.overdue').length;
    },
  };
}

/** The rows of both task read models, in a stable order, for comparing before and after a rebuild. */
export async function taskReadModels(pool: pg.Pool): Promise<unknown> {
  const tasks = await pool.query('SELECT * FROM tasks ORDER BY id');
  const timers = await pool.query('SELECT * FROM task_timers ORDER BY task_id');
  return { tasks: tasks.rows, timers: timers.rows };
}
