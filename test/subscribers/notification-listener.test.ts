import t from 'tap';
import { pino } from 'pino';
import type pg from 'pg';
import { createPool } from '../../src/storage/postgres.js';
import { listen } from '../../src/subscribers/notification-listener.js';
import { freshDatabase } from '../support/db.js';

const CHANNEL = 'vcrm_listener_test';
const log = pino({ level: 'silent' });

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const listenerPids = async (admin: pg.Pool) =>
  (
    await admin.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`,
    )
  ).rows.map((r) => r.pid);

t.test(
  'a listener hears NOTIFY, reconnects after losing its connection, and closes cleanly when the loss races its close',
  async (t) => {
    const { pool: admin, url } = await freshDatabase(t);
    const pool = createPool(url, 4);
    t.teardown(() => pool.end());
    // Records the connections the listener takes (they stay the pool's real ones).
    const connections: pg.PoolClient[] = [];
    const connect = pool.connect.bind(pool);
    pool.connect = (async () => {
      const connection = await connect();
      connections.push(connection);
      return connection;
    }) as typeof pool.connect;
    let heard = 0;
    const listener = listen(pool, log, { [CHANNEL]: () => heard++ });
    await until('the LISTEN', async () => (await listenerPids(admin)).length === 1);
    await admin.query(`NOTIFY ${CHANNEL}`);
    await until('the first notification', async () => heard === 1);
    t.pass('NOTIFY reaches the handler');

    const [first] = await listenerPids(admin);
    await admin.query('SELECT pg_terminate_backend($1)', [first]);
    await until('a new LISTEN connection', async () => {
      const pids = await listenerPids(admin);
      return pids.length === 1 && pids[0] !== first;
    });
    await admin.query(`NOTIFY ${CHANNEL}`);
    await until('the notification after reconnecting', async () => heard === 2);
    t.pass('after its connection was terminated it listens again on a new one');

    // The connection dies while close() waits for UNLISTEN on it (held up here behind a sleep the test sends on the
    // same connection): the failed UNLISTEN and the connection's error event both want to hand it back; only one may.
    const [second] = await listenerPids(admin);
    const connection = connections.at(-1)!;
    const busy = connection.query('SELECT pg_sleep(5)').catch((error: Error) => error);
    const closing = listener.close();
    await admin.query('SELECT pg_terminate_backend($1)', [second]);
    t.match(await busy, { message: /terminat/ }, 'the connection was terminated under the pending UNLISTEN');
    await t.resolves(closing, 'close() does not throw when the connection fails under it');
    t.equal(
      connection.listenerCount('notification'),
      0,
      'the listener took its notification handler off the connection',
    );
    await until('the pool to hold no connection', async () => pool.totalCount === 0);
    t.equal(pool.totalCount, 0, 'the broken connection went back to the pool once and was discarded');
    t.equal((await listenerPids(admin)).length, 0, 'nothing listens after close');
  },
);
