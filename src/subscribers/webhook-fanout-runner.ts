import type { Logger } from 'pino';
import type { AppServices } from '../http/services.js';
import { fanOutBatch } from './webhook-fanout.js';

/** Runs the fan-out whenever this process commits events and on a timer, one batch after another until caught up. */
export class FanOutRunner {
  private running = false;
  private busy: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly services: AppServices,
    private readonly log: Pick<Logger, 'error'>,
    private readonly options: { pollIntervalMs?: number; batchSize?: number; onDeliveries?: () => void } = {},
  ) {}

  start(): void {
    this.running = true;
    this.timer = setInterval(() => this.wake(), this.options.pollIntervalMs ?? 1000);
    this.wake();
  }

  wake(): void {
    if (!this.running) return;
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = this.catchUp()
      .catch((error: unknown) => this.log.error({ err: error }, 'webhook fan-out failed'))
      .finally(() => {
        this.busy = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  private async catchUp(): Promise<void> {
    while (this.running) {
      const result = await fanOutBatch(this.services.pool, this.services.now(), this.options.batchSize);
      if (result.deliveries > 0) this.options.onDeliveries?.();
      if (result.busy || result.events === 0) return;
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.timer);
    await this.busy;
  }
}
