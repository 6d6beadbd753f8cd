// Statements submitted in one turn leave in one write (BatchingClient), and writes sent without waiting
// (Transaction.send) fail their transaction at COMMIT: the first failure is reported and nothing is kept.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import type pg from 'pg';
import t, { type Test } from 'tap';
import { createPool, onOneConnection } from '../../src/storage/postgres.js';
import { inTransaction, type Transaction } from '../../src/storage/transaction.js';
import { freshDatabase } from '../support/db.js';
import { checkProperty } from '../support/properties.js';
import { TYPESCRIPT_ARGS } from '../support/typescript.js';

/**
 * A proxy on 127.0.0.1 in front of the database, in a process of its own (test/support/counting-proxy.ts), that
 * counts the chunks clients send through it: a write made in one system call arrives as one chunk.
 */
async function countingProxy(t: Test, databaseUrl: string): Promise<{ url: string; chunks: () => Promise<number> }> {
  const target = new URL(databaseUrl);
  const child = fork(
    fileURLToPath(new URL('../support/counting-proxy.ts', import.meta.url)),
    [target.hostname, target.port || '5432'],
    { execArgv: TYPESCRIPT_ARGS },
  );
  t.teardown(() => child.kill());
  const port = await new Promise<number>((resolve) => child.once('message', (m: { port: number }) => resolve(m.port)));
  const chunks = () =>
    new Promise<number>((resolve) => {
      child.once('message', (m: { chunks: number }) => resolve(m.chunks));
      child.send('count');
    });
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return { url: url.toString(), chunks };
}

async function setUp(t: Test): Promise<{ pool: pg.Pool; direct: pg.Pool; chunks: () => Promise<number> }> {
  const { pool: direct, url } = await freshDatabase(t, undefined, 2);
  await direct.query('CREATE TABLE notes (id integer PRIMARY KEY, body text NOT NULL)');
  await direct.query("INSERT INTO notes (id, body) VALUES (0, 'taken')");
  const proxy = await countingProxy(t, url);
  const pool = createPool(proxy.url, 1);
  t.teardown(() => pool.end());
  await pool.query('SELECT 1'); // the connection's start-up is not counted below
  return { pool, direct, chunks: proxy.chunks };
}

const insert = (tx: Transaction, id: number) => tx.send('INSERT INTO notes (id, body) VALUES ($1, $2)', [id, 'x']);

t.test('statements submitted in one turn leave in one write; an awaited answer ends the turn', async (t) => {
  const { pool, chunks } = await setUp(t);
  const opening = [
    { text: 'SELECT pg_advisory_xact_lock($1)', values: [1] },
    { text: 'SELECT pg_advisory_xact_lock($1)', values: [2] },
  ];
  let before = await chunks();
  await inTransaction(
    pool,
    async (tx) => {
      insert(tx, 1);
      insert(tx, 2);
    },
    { opening },
  );
  t.equal((await chunks()) - before, 2, 'BEGIN with the opening, then the two sent writes with COMMIT');

  before = await chunks();
  await inTransaction(
    pool,
    async (tx) => {
      const found = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM notes');
      insert(tx, 3 + found.rows[0]!.n);
    },
    { opening },
  );
  t.equal((await chunks()) - before, 2, 'BEGIN with the opening and the read, then the write with COMMIT');
  t.equal((await pool.query('SELECT count(*)::int AS n FROM notes')).rows[0].n, 4, 'every write committed');
});

t.test('a write sent without waiting that fails: COMMIT rolls back and its own error is reported', async (t) => {
  const { pool } = await setUp(t);
  let destroyed = 0;
  pool.on('release', (error: Error | undefined) => {
    if (error) destroyed += 1;
  });
  const outcome = await inTransaction(pool, async (tx) => {
    insert(tx, 10);
    insert(tx, 0); // taken: a unique violation
    insert(tx, 11);
  }).catch((error: { code?: string }) => error.code);
  t.equal(outcome, '23505', 'the unique violation, not the aborted transaction of the writes after it');
  t.equal((await pool.query('SELECT count(*)::int AS n FROM notes')).rows[0].n, 1, 'nothing of it kept');
  t.equal(destroyed, 1, 'the connection was destroyed, not returned');
});

/** A step of a transaction's work: a write sent without waiting or an awaited query, succeeding or failing. */
const FAILURES = [
  { text: 'INSERT INTO notes (id, body) VALUES (0, $1)', values: ['again'], code: '23505' },
  { text: 'SELECT 1 / $1::int', values: [0], code: '22012' },
  { text: 'SELECT $1::text::int', values: ['x'], code: '22P02' },
];
const step = fc.record({
  awaited: fc.boolean(),
  failure: fc.option(fc.constantFrom(...FAILURES), { freq: 4 }),
});

t.test(
  'property: sent and awaited statements in any order: committed whole when none fails, else the first failure and nothing kept',
  async (t) => {
    const { pool } = await setUp(t);
    let destroyed = 0;
    pool.on('release', (error: Error | undefined) => {
      if (error) destroyed += 1;
    });
    let id = 100;
    await checkProperty(
      t,
      'sent and awaited statements',
      fc.asyncProperty(fc.array(step, { maxLength: 8 }), async (steps) => {
        const ids = steps.map(() => ++id);
        const expected = steps.find((s) => s.failure !== null)?.failure?.code ?? null;
        const destroyedBefore = destroyed;
        const outcome = await inTransaction(pool, async (tx) => {
          for (const [i, s] of steps.entries()) {
            const statement = s.failure ?? {
              text: 'INSERT INTO notes (id, body) VALUES ($1, $2)',
              values: [ids[i], 'x'],
            };
            if (s.awaited) await tx.query(statement.text, statement.values);
            else tx.send(statement.text, statement.values);
          }
        }).then(
          () => null,
          (error: { code?: string }) => error.code ?? 'no code',
        );
        const kept = (await pool.query('SELECT count(*)::int AS n FROM notes WHERE id = ANY($1)', [ids])).rows[0].n;
        if (outcome !== expected) throw new Error(`reported ${outcome}, expected ${expected}`);
        if (kept !== (expected === null ? ids.length : 0)) throw new Error(`${kept} of ${ids.length} rows kept`);
        if (destroyed - destroyedBefore !== (expected === null ? 0 : 1))
          throw new Error(`${destroyed - destroyedBefore} connection(s) destroyed`);
      }),
      60,
    );
  },
);

/** Resolves once a session other than the caller's waits for the advisory lock `key`. */
async function waitsForLock(sql: pg.Pool, key: number): Promise<void> {
  for (;;) {
    const found = await sql.query(
      "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted AND pid <> pg_backend_pid()",
      [key],
    );
    if (found.rowCount) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

t.test(
  "onOneConnection: one turn's statements leave in one write and each runs once the one before has ended",
  async (t) => {
    const { pool, direct, chunks } = await setUp(t);
    // Another session holds the lock the first statement needs, so that statement is running when a row is committed.
    const holder = await direct.connect();
    t.teardown(() => holder.release());
    await holder.query('SELECT pg_advisory_lock(8)');
    const before = await chunks();
    const run = onOneConnection(pool, (sql) =>
      Promise.all([
        sql.query('SELECT pg_advisory_xact_lock(8)'),
        sql.query<{ n: number }>('SELECT count(*)::int AS n FROM notes'),
        sql.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()",
        ),
      ]),
    );
    await waitsForLock(direct, 8);
    await holder.query("INSERT INTO notes (id, body) VALUES (1, 'committed while the first statement waited')");
    await holder.query('SELECT pg_advisory_unlock(8)');
    const [, notes, locks] = await run;
    t.equal((await chunks()) - before, 1, 'the three statements left in one write');
    t.equal(
      notes.rows[0]!.n,
      2,
      'the second statement sees the row committed while the first ran: its snapshot is later',
    );
    t.equal(locks.rows[0]!.n, 0, "the first statement's lock was released at its end: no transaction spans them");
  },
);

t.test('onOneConnection: a connection a statement failed on is destroyed, and the failure reported', async (t) => {
  const { pool } = await setUp(t);
  const pid = async () => (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const before = await pid();
  await t.rejects(
    onOneConnection(pool, (sql) => Promise.all([sql.query('SELECT 1 / 0'), sql.query('SELECT 1')])),
    { message: /division by zero/ },
  );
  t.not(await pid(), before, 'the next statement runs on a new connection');
  t.same((await onOneConnection(pool, (sql) => sql.query('SELECT 2 AS two'))).rows, [{ two: 2 }], 'which works');
});
