import type pg from 'pg';
import type { Logger } from 'pino';
import { fireDueTimers } from '../commands/tasks/fire-timers.js';
import type { EventStore } from '../events/event-store.js';
import { PollingRunner } from './polling-runner.js';

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
export class TaskTimerRunner extends PollingRunner {
  private readonly services: TaskTimerServices;
  private readonly options: { pollIntervalMs?: number; batchSize?: number };
  constructor(
    services: TaskTimerServices,
    log: Pick<Logger, 'error'>,
    options: { pollIntervalMs?: number; batchSize?: number } = {},
  ) {
    super(options.pollIntervalMs ?? 1000, (error) => log.error({ err: error }, 'task timers failed'));
    this.services = services;
    this.options = options;
  }

  protected async catchUp(): Promise<void> {
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
}
