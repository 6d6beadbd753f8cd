import type pg from 'pg';
import type { Logger } from 'pino';
import { fireDueTimers } from '../commands/tasks/fire-timers.js';
import type { EventStore } from '../events/event-store.js';
import { CoalescedRun } from './coalesced-run.js';

export interface TaskTimerServices {
  pool: pg.Pool;
  store: EventStore;
  now: () => Date;
}

/**
 * Fires the durable task timers (task_timers) as their due times pass: on start (timers that fell due while no
 * process ran fire then), and on every tick (1 s unless set), batch after batch until none is due. Any number of
 * processes may run one: each timer is claimed in the transaction that fires it.
 */
export class TaskTimerRunner {
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly pass: CoalescedRun;

  constructor(
    private readonly services: TaskTimerServices,
    log: Pick<Logger, 'error'>,
    private readonly options: { pollIntervalMs?: number; batchSize?: number } = {},
  ) {
    this.pass = new CoalescedRun(
      () => this.catchUp(),
      (error) => log.error({ err: error }, 'task timers failed'),
    );
  }

  start(): void {
    this.running = true;
    this.timer = setInterval(() => this.wake(), this.options.pollIntervalMs ?? 1000);
    this.wake();
  }

  wake(): void {
    if (this.running) this.pass.wake();
  }

  /** Resolves when the pass under way, if any, has finished. */
  settled(): Promise<void> {
    return this.pass.settled();
  }

  private async catchUp(): Promise<void> {
    const batchSize = this.options.batchSize ?? 100;
    while (this.running) {
      const { due, fired } = await fireDueTimers(
        this.services.pool,
        this.services.store,
        this.services.now(),
        batchSize,
      );
      // A full batch another runner had claimed fires nothing here: leave the rest to it until the next tick.
      if (due < batchSize || fired === 0) return;
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.timer);
    await this.pass.settled();
  }
}
