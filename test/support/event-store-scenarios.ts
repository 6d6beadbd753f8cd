import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Test } from 'tap';
import { PostgresEventStore } from '../../src/events/postgres-event-store.js';
import {
  START_OF_LOG,
  WrongExpectedRevisionError,
  type CommandContext,
  type GlobalPosition,
  type StoredEvent,
} from '../../src/events/types.js';

export function context(tenantId = randomUUID()): CommandContext {
  return {
    tenantId,
    sandbox: false,
    metadata: { actor: { type: 'system', name: 'test' }, correlation_id: randomUUID() },
    now: new Date(),
  };
}

/**
 * Many writers append concurrently (some to shared streams, sleeping inside their transactions so commits land out
 * of position order) while a reader follows the log by position. The reader must see every committed event exactly
 * once, in an order that keeps each stream's revisions increasing.
 */
export async function concurrentAppendsWithFollowingReader(
  t: Test,
  pool: pg.Pool,
  writers = 24,
  appendsPerWriter = 8,
): Promise<void> {
  const store = new PostgresEventStore(pool, []);
  const tenantId = randomUUID();
  const committed = new Set<string>();
  let writing = true;

  const writer = async (w: number) => {
    for (let i = 0; i < appendsPerWriter; i++) {
      const stream = i % 2 === 0 ? `test-shared-${tenantId}-${w % 4}` : `test-own-${tenantId}-${w}`;
      await store.transact(context(tenantId), [stream], async (tx) => {
        const events = await tx.append(stream, 'any', [
          { type: 'test.happened', data: { w, i } },
          { type: 'test.happened', data: { w, i, second: true } },
        ]);
        // Hold the transaction open a little, so later positions can commit first.
        await tx.sql.query('SELECT pg_sleep($1)', [Math.random() * 0.02]);
        for (const e of events) committed.add(e.id);
      });
    }
  };

  const seen: StoredEvent[] = [];
  const reader = async () => {
    let after: GlobalPosition = START_OF_LOG;
    // Events become readable once every older transaction of the whole server has ended (other databases'
    // too), so after the writers finish the reader keeps following until it has caught up, or gives up.
    const giveUpAt = () => Date.now() + 30_000;
    let deadline = Number.POSITIVE_INFINITY;
    for (;;) {
      const batch = await store.readAll(after, 37);
      seen.push(...batch);
      if (batch.length > 0) after = batch[batch.length - 1]!.position;
      if (!writing) {
        if (deadline === Number.POSITIVE_INFINITY) deadline = giveUpAt();
        const ours = seen.filter((e) => e.tenantId === tenantId).length;
        if (ours >= committed.size || Date.now() > deadline) return;
      }
      if (batch.length === 0) await new Promise((r) => setTimeout(r, 5));
    }
  };

  const readerDone = reader();
  await Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
  writing = false;
  await readerDone;

  // The database may hold other tests' events; judge only this scenario's.
  const ours = seen.filter((e) => e.tenantId === tenantId);
  const ids = ours.map((e) => e.id);
  t.equal(committed.size, writers * appendsPerWriter * 2, 'every append committed');
  t.equal(ids.length, new Set(ids).size, 'the reader saw no event twice');
  t.same(new Set(ids), committed, 'the reader saw every committed event');
  const lastRevision = new Map<string, number>();
  let ordered = true;
  for (const event of ours) {
    if ((lastRevision.get(event.streamId) ?? -1) >= event.revision) ordered = false;
    lastRevision.set(event.streamId, event.revision);
  }
  t.ok(ordered, "each stream's events arrive in revision order");
}

export async function optimisticConcurrency(t: Test, pool: pg.Pool): Promise<void> {
  const store = new PostgresEventStore(pool, []);
  const stream = `lead-${randomUUID()}`;
  const ctx = context();
  const first = await store.transact(ctx, [stream], (tx) =>
    tx.append(stream, 'no_stream', [{ type: 'lead.created', data: { a: 1 } }]),
  );
  t.equal(first[0]!.revision, 0, 'the first event has revision 0');
  await t.rejects(
    store.transact(ctx, [stream], (tx) => tx.append(stream, 'no_stream', [{ type: 'lead.created', data: {} }])),
    WrongExpectedRevisionError,
    'appending to an existing stream as new fails',
  );
  const conflict: unknown = await store
    .transact(ctx, [], (tx) => tx.append(stream, 'no_stream', [{ type: 'lead.created', data: {} }]))
    .catch((error: unknown) => error);
  t.match(
    conflict,
    { streamId: stream, expected: 'no_stream', actual: 'unknown' },
    'refused at COMMIT, the conflict names the stream; its revision is not read from the aborted transaction',
  );
  await t.rejects(
    store.transact(ctx, [stream], (tx) => tx.append(stream, 5, [{ type: 'lead.updated', data: {} }])),
    WrongExpectedRevisionError,
    'a wrong expected revision fails',
  );
  await store.transact(ctx, [stream], (tx) => tx.append(stream, 0, [{ type: 'lead.updated', data: { b: 2 } }]));
  const events = await store.readStream(stream);
  t.same(
    events.map((e) => [e.revision, e.type]),
    [
      [0, 'lead.created'],
      [1, 'lead.updated'],
    ],
    'the stream reads back in order',
  );
  const [created] = events;
  t.match(created, {
    id: /^[0-9a-f-]{36}$/,
    tenantId: ctx.tenantId,
    sandbox: false,
    data: { a: 1 },
    metadata: { actor: { type: 'system' }, correlation_id: ctx.metadata.correlation_id },
  });
  t.ok(created!.createdAt instanceof Date, 'events carry their time');

  // Simultaneous appends expecting the same revision: exactly one wins.
  const results = await Promise.allSettled(
    Array.from({ length: 8 }, () =>
      store.transact(ctx, [], (tx) => tx.append(stream, 1, [{ type: 'lead.updated', data: {} }])),
    ),
  );
  t.equal(results.filter((r) => r.status === 'fulfilled').length, 1, 'one of eight racing appends wins');
  t.ok(
    results
      .filter((r) => r.status === 'rejected')
      .every((r) => (r as PromiseRejectedResult).reason instanceof WrongExpectedRevisionError),
    'the rest fail with WrongExpectedRevisionError',
  );

  // A failed command appends nothing.
  await t.rejects(
    store.transact(ctx, [stream], async (tx) => {
      await tx.append(stream, 'any', [{ type: 'lead.updated', data: {} }]);
      throw new Error('boom');
    }),
  );
  t.equal((await store.readStream(stream)).length, 3, 'a rolled-back command leaves no event');
}
