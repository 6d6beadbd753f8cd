import type pg from 'pg';
import type { Logger } from 'pino';
import { EVENTS_CHANNEL } from '../events/postgres-event-store.js';
import type { AppServices } from '../http/services.js';
import { DELIVERIES_CHANNEL, purgeDeliveries } from '../webhooks/deliveries.js';
import { DeliveryClient } from '../webhooks/delivery-client.js';
import { webhookRuntime } from '../webhooks/runtime.js';
import { DeliveryWorker, type DeliveryWorkerOptions } from './webhook-delivery-worker.js';
import { FanOutRunner } from './webhook-fanout-runner.js';

export interface Workers {
  stop(): Promise<void>;
}

export interface WorkerOptions extends DeliveryWorkerOptions {
  fanOutPollIntervalMs?: number;
  /** How often the delivery log is purged of entries older than 30 days. */
  purgeIntervalMs?: number;
  /** The delivery timeout; 10 s (the spec's) unless a test shortens it. */
  deliveryTimeoutMs?: number;
}

const HOUR = 3_600_000;

/**
 * Holds one connection that LISTENs for appended events and new deliveries, reconnecting after a loss; the
 * subscribers' poll timers cover the gap meanwhile.
 */
function listen(services: AppServices, log: Logger, handlers: Record<string, () => void>): { close(): Promise<void> } {
  let client: pg.PoolClient | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  const connect = async () => {
    try {
      const c = await services.pool.connect();
      if (closed) return c.release();
      client = c;
      c.on('notification', (message) => handlers[message.channel]?.());
      c.on('error', (error) => {
        log.warn({ err: error }, 'webhook workers: the notification connection failed; reconnecting');
        c.release(error);
        client = undefined;
        if (!closed) retry = setTimeout(() => void connect(), 1000);
      });
      for (const channel of Object.keys(handlers)) await c.query(`LISTEN ${channel}`);
    } catch (error) {
      log.warn({ err: error }, 'webhook workers: cannot LISTEN; retrying');
      if (!closed) retry = setTimeout(() => void connect(), 1000);
    }
  };
  void connect();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      const c = client;
      client = undefined;
      if (c) {
        await c.query('UNLISTEN *').catch(() => undefined);
        c.release();
      }
    },
  };
}

/** Starts the webhook fan-out subscriber and delivery worker of this process, and the delivery log purge. */
export async function startWorkers(services: AppServices, log: Logger, options: WorkerOptions = {}): Promise<Workers> {
  const runtime = webhookRuntime(services);
  const client = new DeliveryClient({ allowLoopback: services.config.webhookAllowLoopback, resolve: runtime.resolve, ca: runtime.ca, timeoutMs: options.deliveryTimeoutMs });
  const fanOut = new FanOutRunner(services, log, { pollIntervalMs: options.fanOutPollIntervalMs ?? options.pollIntervalMs });
  const worker = new DeliveryWorker(services, client, log, options);
  let purging: Promise<void> | undefined;
  const purge = () => (purging ??= runPurge().finally(() => (purging = undefined)));
  const runPurge = async () => {
    try {
      const result = await purgeDeliveries(services.pool, services.now());
      if (result.purged + result.cancelled > 0) log.info(result, 'webhook delivery log purged');
    } catch (error) {
      log.error({ err: error }, 'webhook delivery log purge failed');
    }
  };
  const purgeTimer = setInterval(() => void purge(), options.purgeIntervalMs ?? HOUR);
  const listener = listen(services, log, { [EVENTS_CHANNEL]: () => fanOut.wake(), [DELIVERIES_CHANNEL]: () => worker.wake() });
  fanOut.start();
  worker.start();
  void purge();
  let stopping: Promise<void> | undefined;
  return {
    stop: () =>
      (stopping ??= (async () => {
        clearInterval(purgeTimer);
        await purging;
        await listener.close();
        await fanOut.stop();
        await worker.stop();
        client.close();
      })()),
  };
}
