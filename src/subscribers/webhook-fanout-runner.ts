import type { Logger } from 'pino';
import type { AppServices } from '../bootstrap.js';
import { CoalescedRun } from './coalesced-run.js';
import { fanOutBatch } from './webhook-fanout.js';

/** Runs the fan-out whenever this process commits events and on a timer, one batch after another until caught up. */
export class FanOutRunner {
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly pass: CoalescedRun;

  private readonly services: AppServices;
  private readonly options: { pollIntervalMs?: number; batchSize?: number; onDeliveries?: () => void };
  constructor(
    services: AppServices,
    log: Pick<Logger, 'error'>,
    options: { pollIntervalMs?: number; batchSize?: number; onDeliveries?: () => void } = {},
  ) {
    this.services = services;
    this.options = options;
    this.pass = new CoalescedRun(
      () => this.catchUp(),
      (error) => log.error({ err: error }, 'webhook fan-out failed'),
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

  private async catchUp(): Promise<void> {
    while (this.running) {
      const result = await fanOutBatch(
        this.services.pool,
        this.services.personalData,
        this.services.now(),
        this.options.batchSize,
      );
      if (result.deliveries > 0) this.options.onDeliveries?.();
      if (result.busy || result.events === 0) return;
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.timer);
    await this.pass.settled();
  }
}
