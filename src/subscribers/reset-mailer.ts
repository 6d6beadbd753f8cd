import type { Logger } from 'pino';
import type { AppServices } from '../bootstrap.js';
import { claimResetRequests, handleResetRequest } from '../identity/password-resets.js';
import type { MailTransport } from '../shared/smtp.js';
import { OutboxMailer } from './outbox-mailer.js';

/**
 * Mails the password reset links of the reset outbox (staff_reset_requests), in any number of processes at once:
 * each request is claimed with a lease. The form that writes a request never waits for this.
 */
export class ResetMailer extends OutboxMailer {
  private readonly services: Pick<AppServices, 'pool' | 'config' | 'now'>;
  constructor(
    services: Pick<AppServices, 'pool' | 'config' | 'now'>,
    transport: MailTransport,
    log: Pick<Logger, 'info' | 'warn' | 'error'>,
    options: { pollIntervalMs?: number } = {},
  ) {
    super(transport, log, { name: 'reset mailer', ...options });
    this.services = services;
  }

  protected async sendBatch(batchSize: number): Promise<number> {
    const requests = await claimResetRequests(this.services.pool, this.services.now(), batchSize);
    for (const request of requests) {
      const outcome = await handleResetRequest(this.services, this.transport, request);
      // No email in the log: the request's id is enough to find its row while it exists.
      if (outcome === 'failed') this.log.warn({ reset_request_id: request.id }, 'password reset mail not sent');
    }
    return requests.length;
  }
}
