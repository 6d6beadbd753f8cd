import type pg from 'pg';
import type { Logger } from 'pino';
import type { PersonalDataKeys } from '../events/personal-data.js';
import { openDueDigests } from '../notifications/outbox.js';
import { recordDueFollowUps, recordNotificationsBatch } from '../notifications/record.js';
import { PollingRunner } from './polling-runner.js';

export interface NotificationRecorderServices {
  pool: pg.Pool;
  personalData: PersonalDataKeys;
  now: () => Date;
}

/**
 * Writes members' notifications: follows the event log from its checkpoint (woken by this process's commits, and on
 * every tick for other processes'), notices follow-ups whose time came, and opens the digests whose morning came.
 * Any number of processes may run one: the checkpoint's lock lets one at a time read the log.
 */
export class NotificationRecorder extends PollingRunner {
  private readonly services: NotificationRecorderServices;
  private readonly onRecorded: () => void;
  constructor(
    services: NotificationRecorderServices,
    log: Pick<Logger, 'error'>,
    options: { pollIntervalMs?: number; onRecorded?: () => void } = {},
  ) {
    super(options.pollIntervalMs ?? 1000, (error) => log.error({ err: error }, 'notifications failed'));
    this.services = services;
    this.onRecorded = options.onRecorded ?? (() => undefined);
  }

  protected async catchUp(): Promise<void> {
    const { pool, personalData, now } = this.services;
    let recorded = 0;
    while (this.running) {
      const step = await recordNotificationsBatch(pool, personalData, now());
      recorded += step.recorded;
      if (step.busy || step.events === 0) break;
    }
    recorded += await recordDueFollowUps(pool, now());
    recorded += await openDueDigests(pool, now());
    if (recorded > 0) this.onRecorded();
  }

  /** One pass now, for tests and the CLI: the log read to its end, follow-ups and digests. */
  async runOnce(): Promise<void> {
    this.running = true;
    try {
      await this.catchUp();
    } finally {
      this.running = false;
    }
  }
}
