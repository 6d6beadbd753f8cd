import type pg from 'pg';
import type { Logger } from 'pino';

const RECONNECT_DELAY_MS = 1000;

/**
 * Holds one connection that LISTENs on the handlers' channels, reconnecting after a loss; the subscribers' poll timers
 * cover the gap meanwhile.
 */
export function listen(pool: pg.Pool, log: Logger, handlers: Record<string, () => void>): { close(): Promise<void> } {
  const listener = new NotificationListener(pool, log, handlers);
  void listener.connect();
  return { close: () => listener.close() };
}

/** A connection held for LISTEN: `release` gives it back to the pool once. */
interface Held {
  connection: pg.PoolClient;
  release(error?: Error): void;
  released(): boolean;
}

class NotificationListener {
  private held: Held | undefined;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  private readonly pool: pg.Pool;
  private readonly log: Logger;
  private readonly handlers: Record<string, () => void>;
  constructor(pool: pg.Pool, log: Logger, handlers: Record<string, () => void>) {
    this.pool = pool;
    this.log = log;
    this.handlers = handlers;
  }

  async connect(): Promise<void> {
    let connection: pg.PoolClient;
    try {
      connection = await this.pool.connect();
    } catch (error) {
      this.log.warn({ err: error }, 'webhook workers: cannot connect to LISTEN; retrying');
      return this.scheduleReconnect();
    }
    if (this.closed) return connection.release();
    const held = this.hold(connection);
    try {
      for (const channel of Object.keys(this.handlers)) {
        if (held.released()) return; // closed meanwhile
        await connection.query(`LISTEN ${channel}`);
      }
    } catch (error) {
      this.log.warn({ err: error }, 'webhook workers: cannot LISTEN; retrying');
      held.release(error instanceof Error ? error : new Error(String(error)));
      this.scheduleReconnect();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    this.retry = undefined;
    const h = this.held;
    if (h) {
      await h.connection.query('UNLISTEN *').catch(() => undefined);
      h.release();
    }
  }

  /** Routes the connection's notifications to the handlers and its failure to a reconnect. */
  private hold(connection: pg.PoolClient): Held {
    const onNotification = (message: pg.Notification) => this.handlers[message.channel]?.();
    const onError = (error: Error) => {
      this.log.warn({ err: error }, 'webhook workers: the notification connection failed; reconnecting');
      release(error);
      this.scheduleReconnect();
    };
    // The connection can fail while close() is still sending UNLISTEN on it, and the LISTEN's own failure and the
    // connection's error event report one loss twice: it goes back to the pool once, without this listener's handlers.
    let released = false;
    const release = (error?: Error) => {
      if (released) return;
      released = true;
      connection.off('notification', onNotification);
      connection.off('error', onError);
      if (this.held?.connection === connection) this.held = undefined;
      connection.release(error);
    };
    this.held = { connection, release, released: () => released };
    connection.on('notification', onNotification);
    connection.on('error', onError);
    return this.held;
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.connect();
    }, RECONNECT_DELAY_MS);
  }
}
