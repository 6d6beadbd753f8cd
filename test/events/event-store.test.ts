import { randomUUID } from 'node:crypto';
import t from 'tap';
import { PostgresEventStore } from '../../src/events/postgres-event-store.js';
import { freshDatabase } from '../support/db.js';
import { recordSql } from '../support/sql-recorder.js';
import { concurrentAppendsWithFollowingReader, context, optimisticConcurrency } from '../support/event-store-scenarios.js';

t.test('optimistic concurrency, stream reads and event fields', async (t) => {
  const { pool } = await freshDatabase(t);
  await optimisticConcurrency(t, pool);
});

t.test('concurrent appends and a gap-free following reader', async (t) => {
  const { pool } = await freshDatabase(t, undefined, 30);
  await concurrentAppendsWithFollowingReader(t, pool);
});

t.test('BEGIN, the opening statement and the locks travel with the first query; a new stream is written with COMMIT', async (t) => {
  const { pool } = await freshDatabase(t);
  const store = new PostgresEventStore(pool, []);
  const sent = recordSql(t);

  const stream = `test-${randomUUID()}`;
  const opening = { text: "SET LOCAL application_name = 'vcrm-test-opening'", values: [] };
  const seenInside: string[] = [];
  let pid = 0;
  const appended = await store.transact(
    context(),
    [stream],
    async (tx) => {
      t.notOk(tx.opened, 'nothing is sent before the first query');
      const row = (await tx.sql.query<{ name: string; pid: number }>('SELECT current_setting($1) AS name, pg_backend_pid() AS pid', ['application_name'])).rows[0]!;
      seenInside.push(row.name);
      pid = row.pid;
      t.ok(tx.opened);
      return tx.append(stream, 'no_stream', [{ type: 'test.happened', data: { n: 1 } }]);
    },
    { opening },
  );
  t.equal(sent.length, 2, 'two round trips: the opening with the first query, then the writes with COMMIT');
  t.match(sent[0], /^(PREPARE [^\n]*;\n)*BEGIN;\nSET LOCAL application_name = 'vcrm-test-opening';\nEXECUTE vcrm_\w+\('\{"test-[^"]+"\}'\);\nEXECUTE vcrm_\w+\('application_name'\)$/, 'BEGIN, the opening, the lock and the read');
  t.match(sent[1], /^(PREPARE .*;\n)?EXECUTE vcrm_\w+\(.*\);\nCOMMIT$/s, 'the event insert and COMMIT');
  t.same(seenInside, ['vcrm-test-opening'], 'the opening ran inside the transaction, before the first query');
  t.equal(appended[0]!.revision, 0);
  t.equal((await store.readStream(stream)).length, 1);
  const after = await pool.query<{ name: string }>('SELECT application_name AS name FROM pg_stat_activity WHERE pid = $1', [pid]);
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
});
