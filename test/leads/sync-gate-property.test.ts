import fc from 'fast-check';
import pg from 'pg';
import t from 'tap';
import { leadWriteGate, waitForLeadWrites } from '../../src/intake/sync-gate.js';
import { checkProperty } from '../support/properties.js';
import { leadsFixture } from './helpers.js';

/**
 * The lead-sync gate under any interleaving of writes and lists (src/intake/sync-gate.ts): random schedules of
 * writers that take the gate, insert a row and commit, and lists that wait at the gate, run against PostgreSQL. Each
 * writer is a connection of its own, so no two share a backend (the gate's one documented wait of a write behind a
 * list needs a backend reused). What must hold at every step:
 * - a list ends only after every write that held the gate when it began has been sent its COMMIT, and then sees each
 *   of their rows;
 * - a write takes the gate at once, whatever lists wait;
 * - once the writes a list found have committed, it ends.
 */
type Step = { kind: 'begin' } | { kind: 'commit'; which: number } | { kind: 'list' };

const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'begin' as const }), weight: 3 },
  { arbitrary: fc.nat({ max: 7 }).map((which) => ({ kind: 'commit' as const, which })), weight: 3 },
  { arbitrary: fc.constant({ kind: 'list' as const }), weight: 2 },
);

interface Writer {
  id: number;
  client: pg.Client;
  commitSent: boolean;
}

interface PendingList {
  holders: Writer[];
  /** Resolves when the list has ended: to what it got wrong, or null. */
  done: Promise<string | null>;
  ended: boolean;
}

/** `promise`, or a failure naming `what` after `ms` (a bound on how long a failure takes to show, not a timing). */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen in ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

t.test('the lead-sync gate under random interleavings of writes and lists', async (t) => {
  const f = await leadsFixture(t);
  const tenant = f.workspace.id;
  await f.pool.query('CREATE TABLE gate_probe (id int PRIMARY KEY)');
  let nextId = 0;
  // Connections of their own, outside the app's pool: writers and waiting lists together may outnumber it.
  const connect = async () => {
    const client = new pg.Client({ ...f.pool.options, pipeline: true });
    await client.connect();
    return client;
  };

  const waitingOnLock = async (pid: number) => {
    for (;;) {
      const found = await f.pool.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'", [
        pid,
      ]);
      if (found.rows.length > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  };

  const run = async (steps: Step[]) => {
    await f.pool.query('TRUNCATE gate_probe');
    const open: Writer[] = [];
    const lists: PendingList[] = [];
    const commit = async (writer: Writer) => {
      writer.commitSent = true;
      open.splice(open.indexOf(writer), 1);
      await writer.client.query('COMMIT');
      await writer.client.end(); // a new backend for the next writer: no pid is reused within a run
    };
    try {
      for (const s of steps) {
        if (s.kind === 'begin') {
          const client = await connect();
          await client.query('BEGIN');
          const gate = leadWriteGate(tenant, false);
          await within(client.query(gate.text, gate.values), 10_000, 'a write taking the gate while lists wait');
          const writer = { id: ++nextId, client, commitSent: false };
          await client.query('INSERT INTO gate_probe (id) VALUES ($1)', [writer.id]);
          open.push(writer);
        } else if (s.kind === 'commit') {
          const writer = open[s.which % Math.max(1, open.length)];
          if (writer) await commit(writer);
        } else {
          const holders = [...open];
          const client = await connect();
          const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
          const list: PendingList = { holders, ended: false, done: Promise.resolve(null) };
          // As GET /v1/leads does (listLeads): the read leaves with the gate's statement, in the same write, and the
          // server runs it only once that statement has ended.
          let early: number[] = [];
          const gate = waitForLeadWrites(client, tenant, false).then(() => {
            list.ended = true;
            early = holders.filter((w) => !w.commitSent).map((w) => w.id);
          });
          const read = client.query<{ id: number }>('SELECT id FROM gate_probe WHERE id = ANY ($1)', [
            holders.map((w) => w.id),
          ]);
          list.done = Promise.all([gate, read]).then(async ([, seen]) => {
            await client.end();
            if (early.length > 0) return `a list ended before writes ${early.join(', ')} committed`;
            return seen.rows.length === holders.length ? null : 'a list missed a write it waited for';
          });
          lists.push(list);
          // The next step only once the list's statement has read pg_locks: waiting on a lock, or done.
          if (holders.length > 0) await within(waitingOnLock(pid), 10_000, 'a list waiting at the gate');
        }
        // A list whose holders have all committed ends; one with a holder in flight must not have.
        await new Promise((resolve) => setTimeout(resolve, 5));
        for (const list of lists) {
          if (list.holders.every((w) => w.commitSent)) {
            const wrong = await within(list.done, 10_000, 'a list ending');
            if (wrong) throw new Error(wrong);
          } else if (list.ended) throw new Error('a list ended while a write it found was in flight');
        }
      }
    } catch (error) {
      for (const writer of [...open]) await commit(writer).catch(() => undefined);
      throw error;
    }
    for (const writer of [...open]) await commit(writer);
    const wrong = (await within(Promise.all(lists.map((l) => l.done)), 20_000, 'every list ending')).find(Boolean);
    if (wrong) throw new Error(wrong);
  };

  await checkProperty(
    t,
    'a list waits for exactly the writes that held the gate when it began',
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), run),
    30,
  );
});
