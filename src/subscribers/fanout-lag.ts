import type { Logger } from 'pino';
import type { Queryable } from '../storage/postgres.js';
import { FANOUT_SUBSCRIPTION } from './webhook-fanout.js';

export interface FanOutLag {
  /** Age of the oldest committed event past the fan-out's checkpoint, by the service clock; 0 when caught up. */
  seconds: number;
  /** Committed events past the checkpoint. */
  events: number;
}

/** The backend whose open write transaction holds `pg_snapshot_xmin` back (never its query text). */
export interface BlockingBackend {
  pid: number;
  database: string | null;
  state: string | null;
  transaction_age_seconds: number;
}

/**
 * How far the fan-out is behind: the events committed after its checkpoint. The fan-out reads only below
 * `pg_snapshot_xmin`, so these include events it cannot read yet because an older transaction is still open.
 */
export async function measureFanOutLag(sql: Queryable, now: Date): Promise<FanOutLag> {
  const result = await sql.query<{ events: number; oldest: Date | null }>(
    `SELECT count(*)::bigint AS events, min(e.created_at) AS oldest
       FROM events e
       LEFT JOIN subscription_checkpoints c ON c.name = $1
      WHERE (e.tx_id, e.position) > (coalesce(c.tx_id, '0'::xid8), coalesce(c.position, 0))`,
    [FANOUT_SUBSCRIPTION],
  );
  const row = result.rows[0];
  const oldest = row?.oldest ?? null;
  return {
    events: row?.events ?? 0,
    seconds: oldest ? Math.max(0, (now.getTime() - oldest.getTime()) / 1000) : 0,
  };
}

/**
 * The backend with the oldest open transaction that has a transaction id, in any database of the server: the one
 * that holds `pg_snapshot_xmin` (and so the fan-out) back. Seeing other roles' sessions needs `pg_read_all_stats`.
 */
export async function oldestWriteTransaction(sql: Queryable): Promise<BlockingBackend | null> {
  const result = await sql.query<BlockingBackend>(
    `SELECT pid, datname AS database, state,
            round(extract(epoch FROM clock_timestamp() - xact_start)::numeric, 1)::float8 AS transaction_age_seconds
       FROM pg_stat_activity
      WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()
      ORDER BY age(backend_xid) DESC
      LIMIT 1`,
  );
  return result.rows[0] ?? null;
}

export interface LagWatchOptions {
  /** Lag past which a warning is logged. */
  warnAfterSeconds: number;
  /** How often the lag is measured. */
  intervalMs: number;
}

/** Measures the fan-out's lag on a timer and warns, naming the blocking backend, while it exceeds the threshold. */
export function watchFanOutLag(
  sql: Queryable,
  now: () => Date,
  log: Pick<Logger, 'warn' | 'error'>,
  options: LagWatchOptions,
): { stop(): Promise<void> } {
  let checking: Promise<void> | undefined;
  const check = async () => {
    try {
      const lag = await measureFanOutLag(sql, now());
      if (lag.seconds <= options.warnAfterSeconds) return;
      const blocking = await oldestWriteTransaction(sql);
      log.warn(
        { lag_seconds: Math.round(lag.seconds * 10) / 10, lag_events: lag.events, blocking_backend: blocking },
        'webhook fan-out is behind; blocking_backend is the oldest open write transaction on the PostgreSQL server',
      );
    } catch (error) {
      log.error({ err: error }, 'measuring the webhook fan-out lag failed');
    }
  };
  const timer = setInterval(() => {
    checking ??= check().finally(() => (checking = undefined));
  }, options.intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await checking;
    },
  };
}
