import { CoalescedRun } from './coalesced-run.js';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { pauseEndpoint } from '../commands/webhooks/endpoints.js';
import { PAUSE_THRESHOLD } from '../domain/webhooks/endpoint.js';
import type { AppServices } from '../bootstrap.js';
import {
  DEFAULT_FAST_ENDPOINT_IN_FLIGHT,
  DEFAULT_PER_ENDPOINT_IN_FLIGHT,
  DEFAULT_PER_TENANT_IN_FLIGHT,
  claimDueDeliveries,
  type ClaimedDelivery,
} from '../webhooks/claims.js';
import { endSupersededDeliveries, recordAttempts, type AttemptRecord } from '../webhooks/deliveries.js';
import { DELIVERY_TIMEOUT_MS, type DeliveryClient, type DeliveryResult } from '../webhooks/delivery-client.js';
import { nextAttemptAt } from '../webhooks/retry-schedule.js';
import { signatureHeader, standardSignatureHeader } from '../webhooks/signing.js';

interface WrittenAttempt {
  record: AttemptRecord;
  delivery: ClaimedDelivery;
  done: () => void;
}

export const USER_AGENT = 'Service-Webhooks/1.0';
const WRITE_BATCH = 200;
/**
 * One recording statement at a time per worker: the attempts that finish while it runs go together in the next one.
 * Its cost is mostly fixed per statement, and statements for one endpoint wait for each other on its queue row anyway,
 * so four at once only made each a quarter as large (docs/benchmarks.md, bench:webhooks).
 */
const MAX_CONCURRENT_WRITES = 1;
/** Endpoint secrets kept opened, by endpoint and sealed value (a rotation seals a new value); cleared when full. */
const OPENED_SECRETS = 1_024;
/**
 * A claim's lease: the delivery timeout plus a margin for signing, DNS and recording the attempt. After a crash the
 * deliveries that were in flight are claimed again once it ends (docs/decisions.md).
 */
export const LEASE_MS = DELIVERY_TIMEOUT_MS + 5_000;

export interface DeliveryWorkerOptions {
  /** Deliveries in flight at once in this process. */
  concurrency?: number;
  /** Deliveries in flight at once to one endpoint, across all workers (slow, failing and new endpoints). */
  perEndpointConcurrency?: number;
  /**
   * Deliveries in flight at once to one endpoint proven fast (docs/decisions.md). Unset: 64, or perEndpointConcurrency
   * when only that is given (one cap for every endpoint).
   */
  fastEndpointConcurrency?: number;
  /** Deliveries in flight at once to all the endpoints of one tenant, across all workers (default 64, docs/decisions.md). */
  perTenantConcurrency?: number;
  /** How long a claim keeps other workers off a delivery; longer than the 10 s delivery timeout. */
  leaseMs?: number;
  /** How often to look for due deliveries without being told (retries come due this way). */
  pollIntervalMs?: number;
  workerId?: string;
  /** The source of the retry schedule's jitter, a number in [0, 1) (tests pass a constant to pin the schedule). */
  random?: () => number;
}

/**
 * The headers of one attempt: the spec's, the endpoint's sequence number and the event sent to it just before (none
 * on its first delivery), and the Standard Webhooks ones (webhook-id is the event id).
 */
export function deliveryHeaders(
  delivery: Pick<ClaimedDelivery, 'id' | 'event_id' | 'event_type' | 'body' | 'sequence' | 'previous_event_id'>,
  secrets: readonly string[],
  now: Date,
): Record<string, string> {
  const t = Math.floor(now.getTime() / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-service-event': delivery.event_type,
    'x-service-delivery': delivery.id,
    'x-service-signature': signatureHeader(secrets, t, delivery.body),
    ...(delivery.sequence ? { 'x-service-sequence': delivery.sequence } : {}),
    ...(delivery.previous_event_id ? { 'x-service-previous-event': delivery.previous_event_id } : {}),
    'webhook-id': delivery.event_id,
    'webhook-timestamp': String(t),
    'webhook-signature': standardSignatureHeader(secrets, delivery.event_id, t, delivery.body),
  };
}

/**
 * Sends due deliveries. Claims them in the database with a lease (so any number of workers in any number of
 * processes share the work without sending one twice), posts them, and records each attempt with its next retry
 * time, so a restart picks up retries on time and a crashed worker's leases run out and are claimed again.
 */
export class DeliveryWorker {
  readonly id: string;
  private readonly concurrency: number;
  private readonly perEndpoint: number;
  private readonly perFastEndpoint: number;
  private readonly perTenant: number;
  private readonly leaseMs: number;
  private readonly random: () => number;
  private readonly pollIntervalMs: number;
  private inFlight = 0;
  private readonly sending = new Set<Promise<void>>();
  private readonly claiming: CoalescedRun;
  private running = false;
  private wakeScheduled = false;
  private timer: NodeJS.Timeout | undefined;
  /** A wake-up at the instant an endpoint held back by its rate may send again, and that instant (ms). */
  private rateTimer: NodeJS.Timeout | undefined;
  private rateTimerAt = Infinity;
  /** Finished attempts waiting to be written; written in batches, a few statements at a time. */
  private readonly finished: WrittenAttempt[] = [];
  private writing = 0;
  /** Secrets opened for signing, by `endpoint id:sealed value`: opening one is an AES-GCM decryption per attempt. */
  private readonly opened = new Map<string, string>();

  private readonly services: AppServices;
  private readonly client: DeliveryClient;
  private readonly log: Pick<Logger, 'warn' | 'error' | 'info'>;
  constructor(
    services: AppServices,
    client: DeliveryClient,
    log: Pick<Logger, 'warn' | 'error' | 'info'>,
    options: DeliveryWorkerOptions = {},
  ) {
    this.services = services;
    this.client = client;
    this.log = log;
    this.id = options.workerId ?? `worker-${randomUUID()}`;
    this.concurrency = options.concurrency ?? 128;
    this.perEndpoint = options.perEndpointConcurrency ?? DEFAULT_PER_ENDPOINT_IN_FLIGHT;
    this.perFastEndpoint =
      options.fastEndpointConcurrency ??
      (options.perEndpointConcurrency !== undefined ? this.perEndpoint : DEFAULT_FAST_ENDPOINT_IN_FLIGHT);
    this.perTenant = options.perTenantConcurrency ?? DEFAULT_PER_TENANT_IN_FLIGHT;
    this.leaseMs = options.leaseMs ?? LEASE_MS;
    this.random = options.random ?? Math.random;
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.claiming = new CoalescedRun(
      () => this.pump(),
      (error) => log.error({ err: error }, 'webhook delivery worker: claiming failed'),
    );
  }

  start(): void {
    this.running = true;
    this.timer = setInterval(() => this.wake(), this.pollIntervalMs);
    this.wake();
  }

  /**
   * Looks for due deliveries (called on a database notification, by the poll timer, and when an attempt has been
   * recorded and its slot is free). The claim starts on the next turn of the event loop, so the wake-ups of one turn
   * make one claim: the attempts recorded by one statement free their slots together, and a claim started at the
   * first of them would see every one (they committed together) and leave the others' wake-ups a second claim that
   * finds nothing.
   */
  wake(): void {
    if (!this.running || this.wakeScheduled) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      if (this.running) this.claiming.wake();
    });
  }

  /**
   * Claims as soon as any slot is free: one claim per wake-up, and wake-ups that arrive while a claim runs are
   * coalesced into the next one, so under load claims still come in batches.
   */
  private async pump(): Promise<void> {
    while (this.running && this.inFlight < this.concurrency) {
      const free = this.concurrency - this.inFlight;
      const began = performance.now();
      const claimed = await this.claim(free);
      this.services.metrics.recordClaim(claimed.length, performance.now() - began);
      for (const delivery of claimed) this.send(delivery);
      if (claimed.length < free) return;
    }
  }

  private claim(free: number): Promise<ClaimedDelivery[]> {
    const now = this.services.now();
    return claimDueDeliveries(
      this.services.pool,
      this.id,
      now,
      new Date(now.getTime() + this.leaseMs),
      {
        limit: free,
        perEndpoint: this.perEndpoint,
        perFastEndpoint: this.perFastEndpoint,
        perTenant: this.perTenant,
      },
      { named: this.services.namedStatements, onThrottled: (openAt) => this.wakeAt(openAt) },
    );
  }

  /**
   * Claims again at `atMs` (an endpoint's rate opens then), unless an earlier wake-up is set: a throttled endpoint then
   * sends as soon as its rate allows rather than at the next poll. Other workers find it by their poll.
   */
  private wakeAt(atMs: number): void {
    if (!this.running || atMs >= this.rateTimerAt) return;
    clearTimeout(this.rateTimer);
    this.rateTimerAt = atMs;
    this.rateTimer = setTimeout(
      () => {
        this.rateTimerAt = Infinity;
        this.rateTimer = undefined;
        this.wake();
      },
      Math.max(0, atMs - this.services.now().getTime() + 1),
    );
  }

  private send(delivery: ClaimedDelivery): void {
    this.inFlight++;
    const task = this.deliver(delivery)
      .catch((error: unknown) =>
        this.log.error({ err: error, delivery_id: delivery.id }, 'webhook delivery failed to record'),
      )
      .finally(() => {
        this.inFlight--;
        this.sending.delete(task);
        this.wake();
      });
    this.sending.add(task);
  }

  private secrets(delivery: ClaimedDelivery, now: Date): string[] {
    const secrets = [this.open(delivery.endpoint_id, delivery.sealed_secret)];
    if (
      delivery.previous_sealed_secret &&
      delivery.previous_secret_valid_until &&
      delivery.previous_secret_valid_until.getTime() > now.getTime()
    ) {
      secrets.push(this.open(delivery.endpoint_id, delivery.previous_sealed_secret));
    }
    return secrets;
  }

  private open(endpointId: string, sealed: string): string {
    const key = `${endpointId}:${sealed}`;
    let secret = this.opened.get(key);
    if (secret === undefined) {
      secret = this.services.secretBox.webhookSecrets.openFor(endpointId, sealed);
      if (this.opened.size >= OPENED_SECRETS) this.opened.clear();
      this.opened.set(key, secret);
    }
    return secret;
  }

  private async deliver(delivery: ClaimedDelivery): Promise<void> {
    const attemptedAt = this.services.now();
    const headers = deliveryHeaders(delivery, this.secrets(delivery, attemptedAt), attemptedAt);
    let result: DeliveryResult;
    try {
      result = await this.client.post(delivery.url, headers, delivery.body);
    } catch (error) {
      result = {
        ok: false,
        status: null,
        headers: null,
        body: null,
        durationMs: 0,
        error: error instanceof Error ? error.message : String(error),
        address: null,
      };
    }
    const finishedAt = this.services.now();
    this.services.metrics.recordDelivery(result.ok, result.durationMs);
    const attempt = delivery.attempts + 1;
    const record: AttemptRecord = {
      deliveryId: delivery.id,
      attempt,
      ok: result.ok,
      nextAttemptAt: result.ok ? null : nextAttemptAt(attempt, finishedAt, this.random),
      attemptedAt,
      finishedAt,
      requestHeaders: headers,
      responseStatus: result.status,
      responseHeaders: result.headers,
      responseBody: result.body,
      durationMs: result.durationMs,
      error: result.error,
      leaseUntil: delivery.lease_until,
    };
    const ended = performance.now();
    await new Promise<void>((done) => {
      this.finished.push({ record, delivery, done });
      this.write();
    });
    this.services.metrics.recordRecordingDelay(performance.now() - ended);
  }

  private write(): void {
    if (this.writing >= MAX_CONCURRENT_WRITES || this.finished.length === 0) return;
    const batch = this.finished.splice(0, WRITE_BATCH);
    this.writing++;
    void recordAttempts(
      this.services.pool,
      this.id,
      batch.map((b) => b.record),
      { named: this.services.namedStatements },
    )
      .then(async (recorded) => {
        await this.endSupersededRetries(batch, recorded);
        await this.pauseFailingEndpoints(batch, recorded);
      })
      // Unrecorded attempts keep their lease until it ends; then they are claimed and sent again (at least once).
      .catch((error: unknown) => this.log.error({ err: error }, 'webhook delivery: recording attempts failed'))
      .finally(() => {
        this.writing--;
        for (const b of batch) b.done();
        this.write();
      });
  }

  /** A resend that succeeded ends the retries of the same event to the same endpoint (the log names the resend). */
  private async endSupersededRetries(batch: readonly WrittenAttempt[], recorded: Map<string, number | null>) {
    const resends = batch
      .filter(({ delivery, record }) => record.ok && delivery.resend_of !== null && recorded.has(delivery.id))
      .map(({ delivery }) => delivery);
    const ended = await endSupersededDeliveries(this.services.pool, resends, this.services.now());
    if (ended > 0) this.log.info({ deliveries: ended }, 'webhook delivery: a successful resend ended pending retries');
  }

  private async pauseFailingEndpoints(batch: readonly WrittenAttempt[], recorded: Map<string, number | null>) {
    const toPause = new Map<string, number>();
    for (const { delivery, record } of batch) {
      if (!recorded.has(delivery.id)) {
        this.log.warn(
          { delivery_id: delivery.id },
          'webhook delivery: the attempt was not recorded (lease ended or delivery ended)',
        );
        continue;
      }
      const failures = recorded.get(delivery.id);
      if (!record.ok && failures != null && failures >= PAUSE_THRESHOLD && delivery.endpoint_status === 'active')
        toPause.set(delivery.endpoint_id, failures);
    }
    for (const [endpointId, failures] of toPause) {
      if (await pauseEndpoint(this.services, endpointId, failures)) {
        this.log.warn({ endpoint_id: endpointId, consecutive_failures: failures }, 'webhook endpoint paused');
        if (!this.services.config.smtpUrl)
          this.log.warn(
            { endpoint_id: endpointId },
            'no SMTP_URL: the workspace owners were not emailed about the paused endpoint (the notice is kept in webhook_notifications)',
          );
      }
    }
  }

  /** Stops claiming and waits for the deliveries in flight to be sent and recorded. */
  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.timer);
    clearTimeout(this.rateTimer);
    this.rateTimerAt = Infinity;
    while (this.sending.size > 0) await Promise.allSettled([...this.sending]);
  }
}
