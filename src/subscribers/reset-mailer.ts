import type { Logger } from 'pino';
import type { AppServices } from '../bootstrap.js';
import { claimResetRequests, handleResetRequest } from '../identity/password-resets.js';
import type { MailTransport } from '../identity/mail.js';
import { CoalescedRun } from './coalesced-run.js';

const BATCH = 10;

/**
 * Mails the password reset links of the reset outbox (staff_reset_requests), in any number of processes at once:
 * each request is claimed with a lease. The form that writes a request never waits for this.
 */
export class ResetMailer {
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly pass: CoalescedRun;

  constructor(
    private readonly services: Pick<AppServices, 'pool' | 'config' | 'now'>,
    private readonly transport: MailTransport,
    private readonly log: Pick<Logger, 'info' | 'warn' | 'error'>,
    private readonly options: { pollIntervalMs?: number } = {},
  ) {
    this.pass = new CoalescedRun(
      () => this.sendDue(),
      (error) => log.error({ err: error }, 'reset mailer failed'),
    );
  }

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
    clearInterval(this.timer);
    await this.pass.settled();
    this.transport.close();
  }

  /** Handles every due request now: the timer and NOTIFY call it through `wake`, a test may call it directly. */
  async sendDue(): Promise<void> {
    for (;;) {
      const requests = await claimResetRequests(this.services.pool, this.services.now(), BATCH);
      for (const request of requests) {
        const outcome = await handleResetRequest(this.services, this.transport, request);
        // No email in the log: the request's id is enough to find its row while it exists.
        if (outcome === 'failed') this.log.warn({ reset_request_id: request.id }, 'password reset mail not sent');
      }
      if (requests.length < BATCH) return;
    }
  }
}
