import { randomUUID } from 'node:crypto';
import pg from 'pg';
import t from 'tap';
import { PostgresEventStore } from '../../src/events/postgres-event-store.js';
import { freshDatabase } from '../support/db.js';
import { concurrentAppendsWithFollowingReader, context, optimisticConcurrency } from '../support/event-store-scenarios.js';

t.test('optimistic concurrency, stream reads and event fields', async (t) => {
  const { pool } = await freshDatabase(t);
  await optimisticConcurrency(t, pool);
});

t.test('concurrent appends and a gap-free following reader', async (t) => {
  const { pool } = await freshDatabase(t, undefined, 30);
  await concurrentAppendsWithFollowingReader(t, pool);
});

t.test('BEGIN, locks and `before` travel with the first query; a new stream is written with COMMIT', async (t) => {
  const { pool } = await freshDatabase(t);
  await pool.query('CREATE TABLE markers (id uuid PRIMARY KEY)');
  const store = new PostgresEventStore(pool, []);
  const sent: string[] = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    if (typeof args[0] === 'string') sent.push(args[0]);
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  t.teardown(() => {
    pg.Client.prototype.query = original;
  });

  const stream = `test-${randomUUID()}`;
  const marker = randomUUID();
  const before = { text: 'INSERT INTO markers (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', values: [marker] };
  const appended = await store.transact(
    context(),
    [stream],
    async (tx) => {
      t.notOk(tx.opened, 'nothing is sent before the first query');
      await tx.sql.query('SELECT 1');
      t.ok(tx.opened);
      return tx.append(stream, 'no_stream', [{ type: 'test.happened', data: { n: 1 } }]);
    },
    { before },
  );
  t.equal(sent.length, 2, 'two round trips: the opening with the first query, then the writes with COMMIT');
  t.match(sent[0], /EXECUTE vcrm_\w+\('[0-9a-f-]{36}'\);\nCOMMIT;\nBEGIN;\nEXECUTE vcrm_\w+\('\{"test-[^"]+"\}'\);\nSELECT 1$/, 'before, COMMIT, BEGIN, the lock and the read');
  t.match(sent[1], /^(PREPARE .*;\n)?EXECUTE vcrm_\w+\(.*\);\nCOMMIT$/s, 'the event insert and COMMIT');
  t.equal(appended[0]!.revision, 0);
  t.equal((await store.readStream(stream)).length, 1);

  // `before` is committed on its own: it stays when the transaction fails.
  const second = randomUUID();
  await t.rejects(
    store.transact(
      context(),
      [stream],
      async (tx) => {
        await tx.sql.query('SELECT 1');
        await tx.append(`test-${randomUUID()}`, 'no_stream', [{ type: 'test.happened', data: {} }]);
        throw new Error('boom');
      },
      { before: { ...before, values: [second] } },
    ),
    /boom/,
  );
  t.equal((await pool.query('SELECT count(*)::int AS n FROM markers WHERE id = $1', [second])).rows[0].n, 1, 'the marker committed before the failed transaction');
  t.equal((await store.readStream(stream)).length, 1, 'the failed transaction appended nothing');
});
