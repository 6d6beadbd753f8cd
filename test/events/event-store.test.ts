import { randomUUID } from 'node:crypto';
import t from 'tap';
import { PostgresEventStore } from '../../src/events/postgres-event-store.js';
import { freshDatabase } from '../support/db.js';
import { recordSql, transactions } from '../support/sql-recorder.js';
import {
  concurrentAppendsWithFollowingReader,
  context,
  optimisticConcurrency,
} from '../support/event-store-scenarios.js';

t.test('optimistic concurrency, stream reads and event fields', async (t) => {
  const { pool } = await freshDatabase(t);
  await optimisticConcurrency(t, pool);
});

t.test('concurrent appends and a gap-free following reader', async (t) => {
  const { pool } = await freshDatabase(t, undefined, 30);
  await concurrentAppendsWithFollowingReader(t, pool);
});

t.test(
  'BEGIN, the opening statement and the locks travel with the first query; a new stream is written with COMMIT',
  async (t) => {
    const { pool } = await freshDatabase(t);
    const store = new PostgresEventStore(pool, []);
    const sent = recordSql(t);

    const stream = `test-${randomUUID()}`;
    const opening = { text: "SELECT set_config('application_name', $1, true)", values: ['vcrm-test-opening'] };
    const seenInside: string[] = [];
    let pid = 0;
    const appended = await store.transact(
      context(),
      [stream],
      async (tx) => {
        t.notOk(tx.opened, 'nothing is sent before the first query');
        const row = (
          await tx.sql.query<{ name: string; pid: number }>(
            'SELECT current_setting($1) AS name, pg_backend_pid() AS pid',
            ['application_name'],
          )
        ).rows[0]!;
        seenInside.push(row.name);
        pid = row.pid;
        t.ok(tx.opened);
        return tx.append(stream, 'no_stream', [{ type: 'test.happened', data: { n: 1 } }]);
      },
      { opening },
    );
    const [tx] = transactions(sent);
    t.same(
      tx!.map((s) => [s.roundTrip - tx![0]!.roundTrip + 1, s.text.split(/\s+/).slice(0, 3).join(' ')]),
      [
        [1, 'BEGIN'],
        [1, "SELECT set_config('application_name', $1,"],
        [1, 'SELECT pg_advisory_xact_lock(hashtextextended(s, 0))'],
        [1, 'SELECT current_setting($1) AS'],
        [2, 'INSERT INTO events'],
        [2, 'COMMIT'],
      ],
      'two round trips: BEGIN, the opening, the lock and the read; then the event insert and COMMIT',
    );
    t.ok(
      tx!.every((s) => s.prepared),
      'every statement goes as a prepared statement, its values as bind parameters',
    );
    t.same(seenInside, ['vcrm-test-opening'], 'the opening ran inside the transaction, before the first query');
    t.equal(appended[0]!.revision, 0);
    t.equal((await store.readStream(stream)).length, 1);
    const after = await pool.query<{ name: string }>(
      'SELECT application_name AS name FROM pg_stat_activity WHERE pid = $1',
      [pid],
    );
    t.not(after.rows[0]!.name, 'vcrm-test-opening', 'a SET LOCAL opening ends with its transaction');

    await t.rejects(
      store.transact(
        context(),
        [stream],
        async (tx) => {
          await tx.sql.query('SELECT 1');
          await tx.append(`test-${randomUUID()}`, 'no_stream', [{ type: 'test.happened', data: {} }]);
          throw new Error('boom');
        },
        { opening },
      ),
      /boom/,
    );
    t.equal((await store.readStream(stream)).length, 1, 'the failed transaction appended nothing');
  },
);
