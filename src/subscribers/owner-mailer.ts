import type pg from 'pg';
import type { Logger } from 'pino';
import { claimDueNotices, markNoticeFailed, markNoticeSent, type PendingNotice } from '../webhooks/owner-notices.js';
import type { MailTransport } from '../shared/smtp.js';
import { OutboxMailer } from './outbox-mailer.js';

/**
 * Why a send failed, as recorded and logged: the SMTP reply code and nodemailer's error code only. The server's
 * reply text is left out, since it often repeats the recipient's address.
 */
export function sendError(error: unknown): string {
  const e = error as { code?: unknown; responseCode?: unknown };
  const parts = [typeof e.code === 'string' ? e.code : 'ERROR'];
  if (typeof e.responseCode === 'number') parts.push(`SMTP ${e.responseCode}`);
  return parts.join(' ');
}

/**
 * Sends the owner notices of the outbox (webhook_notifications), in any number of processes at once: each notice is
 * claimed with a lease and marked sent by the claim that sent it, so it is sent once unless a mailer dies between
 * sending and recording (then again after the lease: at least once).
 */
export class OwnerMailer extends OutboxMailer {
  private readonly services: { pool: pg.Pool; now: () => Date; from: string };
  constructor(
    services: { pool: pg.Pool; now: () => Date; from: string },
    transport: MailTransport,
    log: Pick<Logger, 'info' | 'warn' | 'error'>,
    options: { pollIntervalMs?: number; batchSize?: number } = {},
  ) {
    super(transport, log, { name: 'owner mailer', ...options });
    this.services = services;
  }

  protected async sendBatch(batchSize: number): Promise<number> {
    const notices = await claimDueNotices(this.services.pool, this.services.now(), batchSize);
    for (const notice of notices) await this.send(notice);
    return notices.length;
  }

  private async send(notice: PendingNotice): Promise<void> {
    try {
      await this.transport.sendMail({
        from: this.services.from,
        to: notice.recipient,
        subject: notice.subject,
        text: notice.body,
      });
    } catch (error) {
      const reason = sendError(error);
      await markNoticeFailed(this.services.pool, notice, this.services.now(), reason);
      // No address in the log: the notice id leads to the row for whoever may read it.
      this.log.warn({ notification_id: notice.id, attempt: notice.attempts, error: reason }, 'owner notice not sent');
      return;
    }
    if (await markNoticeSent(this.services.pool, notice, this.services.now()))
      this.log.info({ notification_id: notice.id }, 'owner notice sent');
    else this.log.warn({ notification_id: notice.id }, 'owner notice sent after its lease ran out');
  }
}
