import type { Logger } from 'pino';
import type { AppServices } from '../bootstrap.js';
import { DELIVERIES_CHANNEL, purgeDeliveries } from '../webhooks/deliveries.js';
import { purgeExpiredAnswers } from '../intake/idempotency.js';
import { DeliveryClient } from '../webhooks/delivery-client.js';
import { DeliveryWorker, type DeliveryWorkerOptions } from './webhook-delivery-worker.js';
import { FanOutRunner } from './webhook-fanout-runner.js';
import { TaskTimerRunner } from './task-timer-runner.js';
import { DocumentScanRunner } from './document-scan-runner.js';
import { smtpTransport, type MailTransport } from '../shared/smtp.js';
import { OwnerMailer } from './owner-mailer.js';
import { ResetMailer } from './reset-mailer.js';
import { RESET_CHANNEL } from '../identity/password-resets.js';
import { NOTICES_CHANNEL } from '../webhooks/owner-notices.js';
import { listen } from './notification-listener.js';
import { watchFanOutLag } from './fanout-lag.js';
import { JobWorker, type JobWorkerOptions } from './job-worker.js';
import { JOBS_CHANNEL } from '../jobs/jobs.js';
import { jobKindsOf } from './job-kinds.js';
import { NotificationMailer } from './notification-mailer.js';
import { NotificationRecorder } from './notification-recorder.js';
import { NOTIFICATIONS_CHANNEL } from '../notifications/record.js';

export interface Workers {
  stop(): Promise<void>;
}

export interface WorkerOptions extends DeliveryWorkerOptions {
  /** How often the fan-out looks for events appended by processes that run no workers (API-only nodes); 200 ms. */
  fanOutPollIntervalMs?: number;
  /** How often the delivery log is purged of entries older than 30 days, and Idempotency-Key answers past their day. */
  purgeIntervalMs?: number;
  /** The delivery timeout; 10 s (the spec's) unless a test shortens it. */
  deliveryTimeoutMs?: number;
  /** How often the fan-out's lag is measured (and warned about past FANOUT_LAG_WARN_SECONDS); 10 s. */
  lagCheckIntervalMs?: number;
  /** How often the durable task timers are checked for due times that passed; 1 s. */
  taskTimerIntervalMs?: number;
  /** How often documents that arrived while the virus scanner was unreachable are tried again; 5 s. */
  documentScanIntervalMs?: number;
  /** How often the owner mailer looks for notices due again after a failed send; 5 s. */
  mailPollIntervalMs?: number;
  /** How often members' notifications are looked for in other processes' events, follow-ups and digests; 1 s. */
  notificationIntervalMs?: number;
  /** The mail transport; SMTP_URL's unless given. */
  mailTransport?: MailTransport;
  /** The console's jobs (bulk actions, imports): poll interval, lease, and a hook tests hold items at. */
  jobs?: JobWorkerOptions;
}

const HOUR = 3_600_000;

/**
 * Starts the webhook fan-out subscriber and delivery worker of this process, the durable task timers (task.overdue),
 * the scans of documents that arrived while the virus scanner was unreachable, the console's jobs (bulk actions,
 * imports) and the purges of the delivery log and of expired Idempotency-Key answers. They run
 * on the services the API uses (createServices), its pool included: the pool is sized for both (see main.ts).
 */
export async function startWorkers(services: AppServices, log: Logger, options: WorkerOptions = {}): Promise<Workers> {
  const client = deliveryClient(services, options);
  const worker = new DeliveryWorker(services, client, log, options);
  const fanOut = new FanOutRunner(services, log, {
    pollIntervalMs: options.fanOutPollIntervalMs ?? options.pollIntervalMs ?? 200,
    onDeliveries: () => worker.wake(),
  });
  const taskTimers = new TaskTimerRunner(services, log, { pollIntervalMs: options.taskTimerIntervalMs ?? 1000 });
  const documentScans = new DocumentScanRunner(services, log, {
    pollIntervalMs: options.documentScanIntervalMs ?? 5000,
  });
  const jobs = new JobWorker(services, jobKindsOf(services), log, options.jobs);
  const purge = hourlyPurges(services, log, options.purgeIntervalMs ?? HOUR);
  // Appends in this process wake the fan-out at once (the event store does not NOTIFY; other processes' appends are
  // found by the poll). New deliveries are announced with NOTIFY, so a worker in any process starts on them at once.
  const mailer = ownerMailer(services, log, options);
  const resets = resetMailer(services, log, options);
  const notices = notificationMailer(services, log, options);
  const notifications = new NotificationRecorder(services, log, {
    pollIntervalMs: options.notificationIntervalMs ?? 1000,
    onRecorded: () => notices?.wake(),
  });
  const stopWatchingCommits = services.store.onCommit(() => {
    fanOut.wake();
    notifications.wake();
  });
  const listener = listen(services.direct.pool, log, {
    [DELIVERIES_CHANNEL]: () => worker.wake(),
    [NOTICES_CHANNEL]: () => mailer?.wake(),
    [RESET_CHANNEL]: () => resets?.wake(),
    [JOBS_CHANNEL]: () => jobs.wake(),
    [NOTIFICATIONS_CHANNEL]: () => notices?.wake(),
  });
  const lagWatch = watchFanOutLag(services.pool, services.now, log, {
    warnAfterSeconds: services.config.fanOutLagWarnSeconds,
    intervalMs: options.lagCheckIntervalMs ?? 10_000,
  });
  fanOut.start();
  worker.start();
  taskTimers.start();
  documentScans.start();
  jobs.start();
  mailer?.start();
  resets?.start();
  notifications.start();
  notices?.start();
  void purge.run();
  let stopping: Promise<void> | undefined;
  return {
    stop: () =>
      (stopping ??= (async () => {
        purge.stopTimer();
        await lagWatch.stop();
        stopWatchingCommits();
        await purge.running();
        await taskTimers.stop();
        await documentScans.stop();
        await jobs.stop();
        await mailer?.stop();
        await resets?.stop();
        await notifications.stop();
        await notices?.stop();
        await listener.close();
        await fanOut.stop();
        await worker.stop();
        client.close();
      })()),
  };
}

function deliveryClient(services: AppServices, options: WorkerOptions): DeliveryClient {
  return new DeliveryClient({
    allowLoopback: services.config.webhookAllowLoopback,
    resolve: services.webhooks.resolve,
    ca: services.webhooks.ca,
    timeoutMs: options.deliveryTimeoutMs,
  });
}

/**
 * The purges (the delivery log past 30 days, Idempotency-Key answers past their window), every interval from now on; `run` starts one unless one is under way, `running` is the one
 * under way (if any).
 */
function hourlyPurges(services: AppServices, log: Logger, intervalMs: number) {
  let purging: Promise<void> | undefined;
  const purgeOnce = async () => {
    try {
      const result = await purgeDeliveries(services.pool, services.now());
      if (result.purged + result.cancelled > 0) log.info(result, 'webhook delivery log purged');
      const answers = await purgeExpiredAnswers(services.pool, services.now());
      if (answers > 0) log.info({ answers }, 'expired Idempotency-Key answers purged');
    } catch (error) {
      log.error({ err: error }, 'webhook delivery log purge failed');
    }
  };
  const run = () => (purging ??= purgeOnce().finally(() => (purging = undefined)));
  const timer = setInterval(() => void run(), intervalMs);
  return { run, stopTimer: () => clearInterval(timer), running: () => purging };
}

/** Owner notices go out only where SMTP is configured; elsewhere they are recorded as not sent (docs/decisions.md). */
function ownerMailer(services: AppServices, log: Logger, options: WorkerOptions): OwnerMailer | undefined {
  const smtpUrl = services.config.smtpUrl;
  if (!options.mailTransport && !smtpUrl) return undefined;
  return new OwnerMailer(
    { pool: services.pool, now: services.now, from: services.config.smtpFrom },
    options.mailTransport ?? smtpTransport(smtpUrl!),
    log,
    { pollIntervalMs: options.mailPollIntervalMs },
  );
}

/** Password reset links go out where SMTP is configured (the form writes no request elsewhere). */
function resetMailer(services: AppServices, log: Logger, options: WorkerOptions): ResetMailer | undefined {
  const smtpUrl = services.config.smtpUrl;
  if (!options.mailTransport && !smtpUrl) return undefined;
  return new ResetMailer(services, options.mailTransport ?? smtpTransport(smtpUrl!), log, {
    pollIntervalMs: options.mailPollIntervalMs,
  });
}

/** Members' notification mail goes out where SMTP is configured; elsewhere Today still counts them. */
function notificationMailer(
  services: AppServices,
  log: Logger,
  options: WorkerOptions,
): NotificationMailer | undefined {
  const smtpUrl = services.config.smtpUrl;
  if (!options.mailTransport && !smtpUrl) return undefined;
  return new NotificationMailer(
    {
      pool: services.pool,
      now: services.now,
      from: services.config.smtpFrom,
      publicBaseUrl: services.config.publicBaseUrl,
    },
    options.mailTransport ?? smtpTransport(smtpUrl!),
    log,
    { pollIntervalMs: options.mailPollIntervalMs },
  );
}
