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
  'the work starts before the opening is answered, its statements run after it, and shares its failure',
  async (t) => {
    const { pool } = await freshDatabase(t);
    const store = new PostgresEventStore(pool, []);
    const stream = `test-${randomUUID()}`;
    const order: string[] = [];
    // The opening sleeps on the server: the work must be running (its statement sent) before the answer comes back.
    const opening = {
      text: "SELECT pg_sleep(0.2), set_config('application_name', $1, true)",
      values: ['vcrm-test-slow-opening'],
    };
    const seen = await store.transact(
      context(),
      [stream],
      async (tx) => {
        order.push('work started');
        const opened = tx.whenOpened().then(() => order.push('opening answered'));
        const row = (await tx.sql.query<{ name: string }>("SELECT current_setting('application_name') AS name"))
          .rows[0]!;
        await opened;
        return row.name;
      },
      { opening },
    );
    t.same(order, ['work started', 'opening answered'], 'the work ran while the opening was on the server');
    t.equal(seen, 'vcrm-test-slow-opening', "the work's statement ran after the opening, in the same transaction");

    // A failing opening: the work's statement, sent behind it, fails with the opening's error, and so does the whole.
    let workError: unknown;
    await t.rejects(
      store.transact(
        context(),
        [stream],
        async (tx) => {
          try {
            await tx.sql.query('SELECT 1');
          } catch (error) {
            workError = error;
            throw error;
          }
        },
        { opening: { text: 'SELECT 1 / $1::int', values: [0] } },
      ),
      { code: '22012' },
      'the opening refused (division by zero)',
    );
    t.match(workError, { code: '22012' }, "the work's statement reports the opening's failure, not its own refusal");
    t.equal((await store.readStream(stream)).length, 0, 'nothing written');
  },
);

t.test(
  'BEGIN, the opening statement and the locks run before the work; a new stream is written in one statement',
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
        const row = (
          await tx.sql.query<{ name: string; pid: number }>(
            'SELECT current_setting($1) AS name, pg_backend_pid() AS pid',
            ['application_name'],
          )
        ).rows[0]!;
        seenInside.push(row.name);
        pid = row.pid;
        await tx.whenOpened();
        return tx.append(stream, 'no_stream', [{ type: 'test.happened', data: { n: 1 } }]);
      },
      { opening },
    );
    const [tx] = transactions(sent);
    t.same(
      tx!.map((s) => s.text.split(/\s+/).slice(0, 3).join(' ')),
      [
        'BEGIN',
        "SELECT set_config('application_name', $1,",
        'SELECT pg_advisory_xact_lock(hashtextextended(s, 0))',
        'SELECT current_setting($1) AS',
        'INSERT INTO events',
        'COMMIT',
      ],
      'BEGIN, the opening, the lock and the read; then the event insert and COMMIT',
    );
    t.ok(
      tx!.every((s) => !s.values.some((v) => typeof v === 'string' && v.length > 2 && s.text.includes(v))),
      'every value goes as a bind parameter, none in the SQL text',
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
