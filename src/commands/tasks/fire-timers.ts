import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { decide } from '../../domain/tasks/index.js';
import type { EventStore } from '../../events/event-store.js';
import type { CommandContext } from '../../events/types.js';
import { taskStream } from '../../domain/tasks/index.js';
import { runCommand } from '../run-command.js';
import { loadTask } from './task-commands.js';
import { lockPersonOfStream } from '../person-locks.js';

export const TASK_TIMER_ACTOR = { type: 'system', name: 'task timer' } as const;

/**
 * Fires one due timer: in one transaction that holds the task stream's lock, claims the timer row (FOR UPDATE SKIP
 * LOCKED, so a runner that finds it claimed moves on), appends task.overdue, and the projection deletes the row.
 * Appending and deleting commit together, and decide appends task.overdue at most once per due time, so a crash
 * before COMMIT leaves the timer to fire again and one after leaves nothing to fire: exactly once either way.
 */
async function fireTimer(
  store: EventStore,
  timer: { task_id: string; tenant_id: string; sandbox: boolean },
  now: Date,
): Promise<boolean> {
  const context: CommandContext = {
    tenantId: timer.tenant_id,
    sandbox: timer.sandbox,
    metadata: { actor: TASK_TIMER_ACTOR, correlation_id: randomUUID() },
    now,
  };
  const stream = taskStream(timer.task_id);
  return runCommand(store, context, [stream], async (tx) => {
    // The person's lock before the timer row's: an erasure takes them in this order (it re-projects the timers).
    await lockPersonOfStream(tx, stream);
    const claimed = await tx.sql.query(
      'SELECT task_id FROM task_timers WHERE task_id = $1 AND due_at <= $2 FOR UPDATE SKIP LOCKED',
      [timer.task_id, now],
    );
    if (claimed.rows.length === 0) return false;
    const { state, revision } = await loadTask(tx, timer.task_id);
    const events = decide(state, { type: 'mark_overdue', now });
    await tx.append(stream, revision, events);
    return events.length > 0;
  });
}

/** Fires the timers due by `now`, earliest first, up to `limit`; returns how many task.overdue events it appended. */
export async function fireDueTimers(
  pool: pg.Pool,
  store: EventStore,
  now: Date,
  limit = 100,
): Promise<{ due: number; fired: number }> {
  const due = await pool.query<{ task_id: string; tenant_id: string; sandbox: boolean }>(
    'SELECT task_id, tenant_id, sandbox FROM task_timers WHERE due_at <= $1 ORDER BY due_at, task_id LIMIT $2',
    [now, limit],
  );
  let fired = 0;
  for (const timer of due.rows) if (await fireTimer(store, timer, now)) fired += 1;
  return { due: due.rows.length, fired };
}
