import type { Logger } from 'pino';
import type { MailTransport } from '../shared/smtp.js';
import { CoalescedRun } from './coalesced-run.js';

/**
 * A worker that mails the rows of an outbox table, in any number of processes at once (each row claimed with a
 * lease): a timer and NOTIFY wake it, one pass runs at a time, and a pass takes batches until one comes back short.
 */
export abstract class OutboxMailer {
  private running = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly pass: CoalescedRun;

  protected readonly transport: MailTransport;
  protected readonly log: Pick<Logger, 'info' | 'warn' | 'error'>;
  private readonly options: { name: string; pollIntervalMs?: number; batchSize?: number };
  constructor(
    transport: MailTransport,
    log: Pick<Logger, 'info' | 'warn' | 'error'>,
    options: { name: string; pollIntervalMs?: number; batchSize?: number },
  ) {
    this.transport = transport;
    this.log = log;
    this.options = options;
    this.pass = new CoalescedRun(
      () => this.sendDue(),
      (error) => log.error({ err: error }, `${options.name} failed`),
    );
  }

  /** Claims up to `batchSize` due rows and mails them; answers how many it claimed. */
  protected abstract sendBatch(batchSize: number): Promise<number>;

  start(): void {
    this.running = true;
    this.timer = setInterval(() => this.wake(), this.options.pollIntervalMs ?? 5_000);
    this.wake();
  }

  wake(): void {
    if (this.running) this.pass.wake();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.stopped = true;
    clearInterval(this.timer);
    await this.pass.settled();
    this.transport.close();
  }

  /** Mails every due row now: the timer and NOTIFY call it through `wake`, a test may call it directly. */
  async sendDue(): Promise<void> {
    const batchSize = this.options.batchSize ?? 10;
    // Stopped while draining: what is left waits for another process or the next start.
    while (!this.stopped && (await this.sendBatch(batchSize)) === batchSize);
  }
}
