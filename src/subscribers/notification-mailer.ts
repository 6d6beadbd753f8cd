import type pg from 'pg';
import type { Logger } from 'pino';
import { atOnceMail, digestMail } from '../notifications/compose.js';
import { listeningMember, tellable } from '../notifications/facts.js';
import {
  claimAtOnce,
  claimDigests,
  notificationsOfDigest,
  retryAtOnceLater,
  retryDigestLater,
  settleAtOnce,
  settleDigest,
  type ClaimedDigest,
  type ClaimedNotification,
} from '../notifications/outbox.js';
import { settingsOf } from '../notifications/settings.js';
import type { MailTransport } from '../shared/smtp.js';
import { findWorkspace } from '../workspaces/repository.js';
import { OutboxMailer } from './outbox-mailer.js';
import { sendError } from './owner-mailer.js';

export interface NotificationMailerServices {
  pool: pg.Pool;
  now: () => Date;
  from: string;
  publicBaseUrl: string;
}

/**
 * Mails members' notifications: each at once to a member who chose that, and each member's morning digest, in any
 * number of processes (rows and digests are claimed with a lease). Whether the member may hear of it, and what it
 * says, is read when it is sent: a member who left, a role that may no longer see it, a lead given to someone else
 * since, get nothing. A mailer killed between the SMTP server's acceptance and the row's update sends again after the
 * lease, with the same Message-ID (docs/decisions.md, "Member notifications").
 */
export class NotificationMailer extends OutboxMailer {
  private readonly services: NotificationMailerServices;
  constructor(
    services: NotificationMailerServices,
    transport: MailTransport,
    log: Pick<Logger, 'info' | 'warn' | 'error'>,
    options: { pollIntervalMs?: number; batchSize?: number } = {},
  ) {
    super(transport, log, { name: 'notification mailer', ...options });
    this.services = services;
  }

  protected async sendBatch(batchSize: number): Promise<number> {
    const now = this.services.now();
    const rows = await claimAtOnce(this.services.pool, now, batchSize);
    for (const row of rows) await this.sendAtOnce(row);
    const digests = await claimDigests(this.services.pool, this.services.now(), batchSize);
    for (const digest of digests) await this.sendDigest(digest);
    return Math.max(rows.length, digests.length);
  }

  private async sendAtOnce(row: ClaimedNotification): Promise<void> {
    const { pool } = this.services;
    const now = this.services.now();
    const workspace = await findWorkspace(pool, row.tenant_id);
    const member = workspace && listeningMember(workspace, row.user_id);
    const told = workspace && member ? await tellable(pool, workspace, row) : null;
    // Owners hear of a pause at once from the owner notice (src/webhooks/owner-notices.ts), which says more.
    const ownerNoticed = row.kind === 'endpoint_paused' && member?.role === 'owner';
    if (
      !workspace ||
      !member ||
      !told ||
      ownerNoticed ||
      !(await settingsOf(pool, row.tenant_id, row.user_id)).atOnce
    ) {
      await settleAtOnce(pool, row, 'skipped');
      return;
    }
    const mail = await atOnceMail(pool, {
      base: this.services.publicBaseUrl,
      workspace,
      to: member.email,
      row,
      told,
      now,
    });
    try {
      await this.transport.sendMail({ from: this.services.from, ...mail });
    } catch (error) {
      await retryAtOnceLater(pool, row, now);
      this.log.warn(
        { notification_id: row.id, attempt: row.instant_attempts, error: sendError(error) },
        'notification not sent',
      );
      return;
    }
    if (!(await settleAtOnce(pool, row, 'sent')))
      this.log.warn({ notification_id: row.id }, 'notification sent after its lease ran out');
  }

  private async sendDigest(digest: ClaimedDigest): Promise<void> {
    const { pool } = this.services;
    const now = this.services.now();
    const workspace = await findWorkspace(pool, digest.tenant_id);
    const member = workspace && listeningMember(workspace, digest.user_id);
    const wanted = member && (await settingsOf(pool, digest.tenant_id, digest.user_id)).digest;
    const told = [];
    if (workspace && wanted)
      for (const row of await notificationsOfDigest(pool, digest)) {
        const said = await tellable(pool, workspace, row);
        if (said) told.push({ row, told: said });
      }
    if (!workspace || !member || told.length === 0) {
      await settleDigest(pool, digest, 'skipped', now);
      return;
    }
    const mail = await digestMail(pool, {
      base: this.services.publicBaseUrl,
      workspace,
      to: member.email,
      userId: digest.user_id,
      digestId: digest.id,
      date: digest.local_date,
      told,
      now,
    });
    try {
      await this.transport.sendMail({ from: this.services.from, ...mail });
    } catch (error) {
      await retryDigestLater(pool, digest, now);
      this.log.warn({ digest_id: digest.id, attempt: digest.attempts, error: sendError(error) }, 'digest not sent');
      return;
    }
    await settleDigest(pool, digest, 'sent', now);
  }
}
