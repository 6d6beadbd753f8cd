import type pg from 'pg';
import type { Logger } from 'pino';

const RECONNECT_DELAY_MS = 1000;

/**
 * Holds one connection that LISTENs on the handlers' channels, reconnecting after a loss; the subscribers' poll timers
 * cover the gap meanwhile.
 */
export function listen(pool: pg.Pool, log: Logger, handlers: Record<string, () => void>): { close(): Promise<void> } {
  let held: { connection: pg.PoolClient; release(error?: Error): void } | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  const scheduleReconnect = () => {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, RECONNECT_DELAY_MS);
  };

  const connect = async () => {
    let connection: pg.PoolClient;
    try {
      connection = await pool.connect();
    } catch (error) {
      log.warn({ err: error }, 'webhook workers: cannot connect to LISTEN; retrying');
      return scheduleReconnect();
    }
    if (closed) return connection.release();
    const onNotification = (message: pg.Notification) => handlers[message.channel]?.();
    const onError = (error: Error) => {
      log.warn({ err: error }, 'webhook workers: the notification connection failed; reconnecting');
      release(error);
      scheduleReconnect();
    };
    // The connection can fail while close() is still sending UNLISTEN on it, and the LISTEN's own failure and the
    // connection's error event report one loss twice: it goes back to the pool once, without this listener's handlers.
    let released = false;
    const release = (error?: Error) => {
      if (released) return;
      released = true;
      connection.off('notification', onNotification);
      connection.off('error', onError);
      if (held?.connection === connection) held = undefined;
      connection.release(error);
    };
    held = { connection, release };
    connection.on('notification', onNotification);
    connection.on('error', onError);
    try {
      for (const channel of Object.keys(handlers)) {
        if (released) return; // closed meanwhile
        await connection.query(`LISTEN ${channel}`);
      }
    } catch (error) {
      log.warn({ err: error }, 'webhook workers: cannot LISTEN; retrying');
      release(error instanceof Error ? error : new Error(String(error)));
      scheduleReconnect();
    }
  };

  void connect();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      retry = undefined;
      const h = held;
      if (h) {
        await h.connection.query('UNLISTEN *').catch(() => undefined);
        h.release();
      }
    },
  };
}
