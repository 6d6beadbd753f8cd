import { randomUUID } from 'node:crypto';
import pg from 'pg';
import t, { type Test } from 'tap';
import type { StoreTransaction } from '../../src/events/event-store.js';
import { PostgresEventStore } from '../../src/events/postgres-event-store.js';
import { WrongExpectedRevisionError } from '../../src/events/types.js';
import { freshDatabase } from '../support/db.js';
import { recordSql, roundTrips, transactions } from '../support/sql-recorder.js';
import { context } from '../support/event-store-scenarios.js';

/**
 * Commands submitted with `coalesce` while their group's transaction is busy run together in one database
 * transaction. The tests hold a first command open (one transaction at a time per group), queue others behind
 * it, then let it go: the queued ones form one shared transaction.
 */

type Work<T> = (tx: StoreTransaction) => Promise<T>;

function gate(): { wait: Promise<void>; open(): void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** Runs `works` queued behind a held command of the same group; returns their settled outcomes and the held one's. */
async function queuedBehindHeld(
  store: PostgresEventStore,
  group: string,
  works: {
    streams: string[];
    work: Work<unknown>;
    openingRank?: number;
    opening?: { text: string; values: unknown[] };
  }[],
) {
  const held = gate();
  const started = gate();
  const first = store.transact(
    context(),
    [],
    async (tx) => {
      await tx.sql.query('SELECT 1');
      started.open();
      await held.wait;
      return 'held';
    },
    { coalesce: group },
  );
  await started.wait;
  const queued = works.map((w) =>
    store.transact(context(), w.streams, w.work, { coalesce: group, opening: w.opening, openingRank: w.openingRank }),
  );
  held.open();
  await first;
  return Promise.allSettled(queued);
}

async function txIdsOf(store: PostgresEventStore, streams: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const stream of streams) for (const event of await store.readStream(stream)) ids.push(event.position.txId);
  return ids;
}

function newStreamWork(stream: string, marker: number): Work<unknown> {
  return async (tx) => {
    const row = (await tx.sql.query<{ n: number }>('SELECT $1::int AS n', [marker])).rows[0]!;
    await tx.append(stream, 'no_stream', [{ type: 'test.happened', data: { n: row.n } }]);
    return row.n;
  };
}

async function setup(t: Test): Promise<{ pool: pg.Pool; store: PostgresEventStore }> {
  const { pool } = await freshDatabase(t);
  return { pool, store: new PostgresEventStore(pool, [], { coalescing: { maxActive: 1, maxItems: 32 } }) };
}

t.test('commands waiting together share one transaction, each with its own reads, events and result', async (t) => {
  const { store } = await setup(t);
  const streams = Array.from({ length: 8 }, () => `test-${randomUUID()}`);
  const sent = recordSql(t);
  const outcomes = await queuedBehindHeld(
    store,
    'g',
    streams.map((stream, i) => ({ streams: [stream], work: newStreamWork(stream, i) })),
  );
  t.same(
    outcomes.map((o) => (o.status === 'fulfilled' ? o.value : o.reason)),
    streams.map((_, i) => i),
    'every command got its own read back',
  );
  const ids = await txIdsOf(store, streams);
  t.equal(ids.length, 8, 'every command appended its event');
  t.equal(new Set(ids).size, 1, 'all eight in one transaction');
  const shared = transactions(sent).find((tx) => tx.filter((s) => s.text.startsWith('SELECT $1::int')).length === 8);
  t.ok(shared, 'one transaction carried the eight reads');
  t.equal(
    roundTrips(shared!.filter((s) => !s.text.startsWith('INSERT') && s.text !== 'COMMIT')),
    1,
    'BEGIN, the locks of all eight and their eight reads went in one round trip',
  );
  t.equal(roundTrips(shared!), 2, 'then their eight events and COMMIT in a second');
});

t.test('commands taking the same lock never share a transaction', async (t) => {
  const { store } = await setup(t);
  const common = `test-${randomUUID()}`;
  const outcomes = await queuedBehindHeld(
    store,
    'g',
    Array.from({ length: 5 }, (_, i) => ({
      streams: [common],
      work: async (tx: StoreTransaction) => {
        await tx.append(common, 'any', [{ type: 'test.happened', data: { i } }]);
        return i;
      },
    })),
  );
  t.ok(
    outcomes.every((o) => o.status === 'fulfilled'),
    'all five committed',
  );
  const events = await store.readStream(common);
  t.same(
    events.map((e) => e.revision),
    [0, 1, 2, 3, 4],
    'in revision order',
  );
  t.equal(new Set(events.map((e) => e.position.txId)).size, 5, 'each in a transaction of its own');
});

t.test('groups never share a transaction', async (t) => {
  const { store } = await setup(t);
  const a = `test-${randomUUID()}`;
  const b = `test-${randomUUID()}`;
  const held = gate();
  const started = gate();
  const firstA = store.transact(
    context(),
    [],
    async (tx) => (await tx.sql.query('SELECT 1'), started.open(), await held.wait),
    { coalesce: 'a' },
  );
  await started.wait;
  const inA = store.transact(context(), [a], newStreamWork(a, 1), { coalesce: 'a' });
  const inB = store.transact(context(), [b], newStreamWork(b, 2), { coalesce: 'b' });
  t.equal(await inB, 2, 'the other group did not wait for the busy one');
  held.open();
  await firstA;
  t.equal(await inA, 1);
  const ids = await txIdsOf(store, [a, b]);
  t.not(ids[0], ids[1]);
});

t.test('a command that fails before writing fails alone; the others commit', async (t) => {
  const { store } = await setup(t);
  const streams = Array.from({ length: 4 }, () => `test-${randomUUID()}`);
  const failing = `test-${randomUUID()}`;
  const outcomes = await queuedBehindHeld(store, 'g', [
    ...streams.map((stream, i) => ({ streams: [stream], work: newStreamWork(stream, i) })),
    {
      streams: [failing],
      work: async (tx: StoreTransaction) => {
        await tx.sql.query('SELECT 1');
        await tx.append(failing, 'no_stream', [{ type: 'test.happened', data: {} }]);
        throw new Error('refused by the command');
      },
    },
  ]);
  t.same(
    outcomes.slice(0, 4).map((o) => o.status),
    ['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled'],
  );
  t.match(outcomes[4], { status: 'rejected', reason: { message: 'refused by the command' } }, 'its own error');
  t.equal((await store.readStream(failing)).length, 0, 'its event (still waiting for COMMIT) was not written');
  t.equal(new Set(await txIdsOf(store, streams)).size, 1, 'the others still shared their transaction');
});

t.test('a command that fails after its writes reached the server: the others run again alone and commit', async (t) => {
  const { pool, store } = await setup(t);
  await pool.query('CREATE TABLE marks (k text PRIMARY KEY)');
  const streams = Array.from({ length: 3 }, () => `test-${randomUUID()}`);
  const mark = randomUUID();
  const outcomes = await queuedBehindHeld(store, 'g', [
    ...streams.map((stream, i) => ({ streams: [stream], work: newStreamWork(stream, i) })),
    {
      streams: [],
      work: async (tx: StoreTransaction) => {
        await tx.writes.query('INSERT INTO marks (k) VALUES ($1)', [mark]);
        await tx.writes.query('SELECT 1');
        throw new Error('failed after writing');
      },
    },
  ]);
  t.same(
    outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message)),
    [0, 1, 2, 'failed after writing'],
  );
  t.equal((await pool.query('SELECT count(*)::int AS n FROM marks')).rows[0].n, 0, 'the failed command wrote nothing');
  const ids = await txIdsOf(store, streams);
  t.equal(ids.length, 3, 'the others committed');
  t.equal(new Set(ids).size, 3, 'each alone, after the shared transaction was rolled back');
});

t.test(
  'a statement failing at the server: the others run again alone, the failing one gets its own error',
  async (t) => {
    const { store } = await setup(t);
    const existing = `test-${randomUUID()}`;
    await store.transact(context(), [existing], newStreamWork(existing, 0));
    const streams = Array.from({ length: 3 }, () => `test-${randomUUID()}`);
    let attempts = 0;
    const outcomes = await queuedBehindHeld(store, 'g', [
      ...streams.map((stream, i) => ({ streams: [stream], work: newStreamWork(stream, i) })),
      {
        // Claims a new stream that exists: refused at COMMIT by the unique revision.
        streams: [],
        work: async (tx: StoreTransaction) => {
          attempts += 1;
          await tx.sql.query('SELECT 1');
          await tx.append(existing, 'no_stream', [{ type: 'test.happened', data: {} }]);
          return 'appended';
        },
      },
    ]);
    t.same(
      outcomes.slice(0, 3).map((o) => o.status),
      ['fulfilled', 'fulfilled', 'fulfilled'],
    );
    t.ok(
      outcomes[3]!.status === 'rejected' && outcomes[3]!.reason instanceof WrongExpectedRevisionError,
      'the conflict reaches its command',
    );
    t.equal(attempts, 2, 'once shared, once alone');
    t.equal((await store.readStream(existing)).length, 1);
    t.equal((await txIdsOf(store, streams)).length, 3, 'the others committed');
  },
);

t.test('a stream locked after another command of the transaction wrote: everyone runs again alone', async (t) => {
  const { store } = await setup(t);
  const existing = `test-${randomUUID()}`;
  await store.transact(context(), [existing], newStreamWork(existing, 0));
  const writer = `test-${randomUUID()}`;
  const writerStarted = gate();
  let lateTries = 0;
  const outcomes = await queuedBehindHeld(store, 'g', [
    {
      // Appends to an existing stream it named: its insert goes to the server at once (it reads the revision back).
      streams: [writer],
      work: async (tx: StoreTransaction) => {
        await tx.append(writer, 'any', [{ type: 'test.happened', data: {} }]);
        writerStarted.open();
        return 'writer';
      },
    },
    {
      // Locks an unnamed stream only after the other command's insert reached the server.
      streams: [],
      work: async (tx: StoreTransaction) => {
        lateTries += 1;
        await tx.sql.query('SELECT 1');
        if (lateTries === 1) await writerStarted.wait;
        await tx.append(existing, 'any', [{ type: 'test.happened', data: {} }]);
        return 'late';
      },
    },
  ]);
  t.same(
    outcomes.map((o) => (o.status === 'fulfilled' ? o.value : o.reason)),
    ['writer', 'late'],
  );
  t.equal(lateTries, 2, 'the late locker ran again alone');
  t.same(
    (await store.readStream(existing)).map((e) => e.revision),
    [0, 1],
  );
  t.equal((await store.readStream(writer)).length, 1, 'the writer committed once');
});

t.test('one opening runs for the shared transaction: the one of lowest rank', async (t) => {
  const { store } = await setup(t);
  const seen: string[] = [];
  const named = (rank: number) => ({
    text: "SELECT set_config('application_name', $1, true)",
    values: [`vcrm-test-${rank}`],
  });
  const outcomes = await queuedBehindHeld(
    store,
    'g',
    [30, 10, 20].map((rank) => {
      const stream = `test-${randomUUID()}`;
      return {
        streams: [stream],
        opening: named(rank),
        openingRank: rank,
        work: async (tx: StoreTransaction) => {
          seen.push(
            (await tx.sql.query<{ name: string }>('SELECT current_setting($1) AS name', ['application_name'])).rows[0]!
              .name,
          );
          await tx.append(stream, 'no_stream', [{ type: 'test.happened', data: {} }]);
          return rank;
        },
      };
    }),
  );
  t.ok(outcomes.every((o) => o.status === 'fulfilled'));
  t.same(seen, ['vcrm-test-10', 'vcrm-test-10', 'vcrm-test-10']);
});

t.test(
  'the connection lost while COMMIT is under way: nobody runs again (it may have committed); each command gets the error',
  async (t) => {
    const { pool, store } = await setup(t);
    await pool.query('CREATE TABLE slow_marks (k text PRIMARY KEY)');
    await pool.query(
      `CREATE FUNCTION slow_mark() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(5); RETURN NEW; END $$`,
    );
    await pool.query('CREATE TRIGGER slow_mark BEFORE INSERT ON slow_marks FOR EACH ROW EXECUTE FUNCTION slow_mark()');
    const streams = Array.from({ length: 3 }, () => `test-${randomUUID()}`);
    let runs = 0;
    const killer = (async () => {
      // The shared transaction's last round trip, stuck in the trigger: its connection is cut.
      for (let i = 0; i < 500; i++) {
        const found = await pool.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'`,
        );
        if (found.rows[0]) return pool.query('SELECT pg_terminate_backend($1)', [found.rows[0].pid]);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      throw new Error('the commit never started');
    })();
    const outcomes = await queuedBehindHeld(store, 'g', [
      ...streams.map((stream, i) => ({
        streams: [stream],
        work: async (tx: StoreTransaction) => {
          runs += 1;
          return newStreamWork(stream, i)(tx);
        },
      })),
      {
        streams: [],
        work: async (tx: StoreTransaction) => {
          runs += 1;
          await tx.writes.query('INSERT INTO slow_marks (k) VALUES ($1)', ['x']);
          return 'marked';
        },
      },
    ]);
    await killer;
    t.equal(runs, 4, 'every command ran once, none again');
    t.ok(
      outcomes.every(
        (o) =>
          o.status === 'rejected' && o.reason instanceof Error && !(o.reason instanceof WrongExpectedRevisionError),
      ),
      'each got the connection error',
    );
    t.equal((await txIdsOf(store, streams)).length, 0, 'nothing was committed');
  },
);
