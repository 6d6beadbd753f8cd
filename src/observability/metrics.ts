import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** What the gauges read when scraped: the state of the pools, queues and backlog at that moment. */
export interface MetricSources {
  /** Requests waiting for a connection of the API's pool. */
  poolWaiting(): number;
  /** Deliveries due and not leased, and deliveries leased (being sent) right now. */
  deliveryBacklog(): Promise<{ due: number; inFlight: number }>;
  /** How far the webhook fan-out is behind the head of the event log. */
  fanOutLag(): Promise<{ seconds: number; events: number }>;
}

const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** For the delivery queue's own steps, which take a few milliseconds when all is well. */
const QUEUE_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];

/**
 * The service's Prometheus metrics, in a registry of its own (so two apps in one process, as in tests, do not share
 * counters). Counters are incremented where things happen; gauges are read from `MetricSources` at scrape time.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly requestDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving a request to sending its answer, by route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: SECONDS_BUCKETS,
    registers: [this.registry],
  });
  readonly leads = new Counter({
    name: 'leads_captured_total',
    help: 'Lead captures answered, by outcome (created, duplicate, replayed)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({
    name: 'rate_limited_total',
    help: 'Requests refused with 429, by scope of the limit',
    labelNames: ['scope'] as const,
    registers: [this.registry],
  });
  readonly deliveries = new Counter({
    name: 'webhook_deliveries_total',
    help: 'Webhook delivery attempts, by outcome (succeeded, failed)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly deliveryDuration = new Histogram({
    name: 'webhook_delivery_duration_seconds',
    help: 'Time a webhook delivery attempt took, by outcome',
    labelNames: ['outcome'] as const,
    buckets: SECONDS_BUCKETS,
    registers: [this.registry],
  });
  readonly deliveryClaims = new Counter({
    name: 'webhook_delivery_claims_total',
    help: 'Claims of due webhook deliveries, by result (claimed: leased at least one; empty: found none to lease)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  // A delivery holds one of its endpoint's in-flight slots from its claim to its outcome's recording: with the
  // attempt's duration, these two say where a slot's time goes (docs/benchmarks.md, bench:webhooks).
  readonly deliveryClaimDuration = new Histogram({
    name: 'webhook_delivery_claim_duration_seconds',
    help: 'Time one claim of due webhook deliveries took, waiting for its locks included',
    buckets: QUEUE_BUCKETS,
    registers: [this.registry],
  });
  readonly deliveryRecordingDelay = new Histogram({
    name: 'webhook_delivery_recording_seconds',
    help: 'Time from the end of a webhook delivery attempt until its outcome was written, waiting for the worker’s previous write included',
    buckets: QUEUE_BUCKETS,
    registers: [this.registry],
  });
  readonly loadShed = new Counter({
    name: 'http_load_shed_total',
    help: 'Requests answered 503 because the service was overloaded, by cause',
    labelNames: ['cause'] as const,
    registers: [this.registry],
  });
  private sources: MetricSources | undefined;

  constructor() {
    const gauge = (name: string, help: string, read: (sources: MetricSources) => Promise<number> | number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        // prom-client calls collect bound to the gauge.
        async collect(this: Gauge) {
          const from = sources();
          if (!from) return;
          // A gauge that cannot be read (the database is saturated or gone) keeps its last value: the scrape still
          // answers, with the counters an operator needs most at that moment.
          try {
            this.set(await read(from));
          } catch {
            return;
          }
        },
      });
    const sources = () => this.sources;
    gauge('db_pool_waiting', 'Requests waiting for a connection of the API database pool', (s) => s.poolWaiting());
    gauge(
      'webhook_deliveries_due',
      'Webhook deliveries due and not being sent',
      async (s) => (await s.deliveryBacklog()).due,
    );
    gauge(
      'webhook_deliveries_in_flight',
      'Webhook deliveries being sent (leased)',
      async (s) => (await s.deliveryBacklog()).inFlight,
    );
    gauge(
      'webhook_fanout_lag_seconds',
      'Age of the oldest committed event the webhook fan-out has not read (0 when caught up)',
      async (s) => (await s.fanOutLag()).seconds,
    );
    gauge(
      'webhook_fanout_lag_events',
      'Committed events the webhook fan-out has not read yet',
      async (s) => (await s.fanOutLag()).events,
    );
  }

  /** One delivery attempt's outcome and duration. */
  recordDelivery(ok: boolean, durationMs: number): void {
    const outcome = ok ? 'succeeded' : 'failed';
    this.deliveries.inc({ outcome });
    this.deliveryDuration.observe({ outcome }, durationMs / 1000);
  }

  /** One claim of due deliveries, how many it leased and how long it took. */
  recordClaim(leased: number, durationMs: number): void {
    this.deliveryClaims.inc({ result: leased > 0 ? 'claimed' : 'empty' });
    this.deliveryClaimDuration.observe(durationMs / 1000);
  }

  /** The time from an attempt's end until its outcome was written (or its write failed). */
  recordRecordingDelay(ms: number): void {
    this.deliveryRecordingDelay.observe(ms / 1000);
  }

  /** Connects the gauges to what they read; until then they report nothing. */
  observe(sources: MetricSources): void {
    this.sources = sources;
  }

  /** The Prometheus text exposition of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/** A lead capture's answer → its outcome label. */
export function leadOutcome(answer: { replayed: boolean; status: number }): 'created' | 'duplicate' | 'replayed' {
  if (answer.replayed) return 'replayed';
  return answer.status === 201 ? 'created' : 'duplicate';
}
