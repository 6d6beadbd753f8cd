import { CoalescedRun } from './coalesced-run.js';

/**
 * A worker that catches up on start and on every tick (and when woken), one pass at a time: the durable task timers
 * and the document scans are such workers. A subclass says what one pass does (`catchUp`), checking `running` between
 * batches so that stop() ends it at the next one.
 */
export abstract class PollingRunner {
  protected running = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly pass: CoalescedRun;

  private readonly intervalMs: number;
  constructor(intervalMs: number, onError: (error: unknown) => void) {
    this.intervalMs = intervalMs;
    this.pass = new CoalescedRun(() => this.catchUp(), onError);
  }

  protected abstract catchUp(): Promise<void>;

  start(): void {
    this.running = true;
    this.timer = setInterval(() => this.wake(), this.intervalMs);
    this.wake();
  }

  wake(): void {
    if (this.running) this.pass.wake();
  }

  /** Resolves when the pass under way, if any, has finished. */
  settled(): Promise<void> {
    return this.pass.settled();
  }

  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.timer);
    await this.pass.settled();
  }
}
