import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import type pg from 'pg';
import t from 'tap';
import { chainFrom, contentDigest, GENESIS } from '../../src/events/chain.js';
import { PostgresEventStore } from '../../src/events/postgres-event-store.js';
import { anchorText, parseAnchor, verifyChains } from '../../src/events/verify-chain.js';
import { migrate } from '../../src/storage/migrate.js';
import { migrations } from '../../src/storage/migrations/index.js';
import { context } from '../support/event-store-scenarios.js';
import { freshDatabase } from '../support/db.js';
import { checkProperty, goodText } from '../support/properties.js';

/** A workspace's log written through the store: new streams, appends at a revision, `any`, several at once, shared. */
async function writeLog(store: PostgresEventStore, tenantId: ReturnType<typeof randomUUID>): Promise<string[]> {
  const streams: string[] = [0, 1, 2].map(() => `test-${randomUUID()}`);
  for (const stream of streams)
    await store.transact(context(tenantId), [], (tx) =>
      tx.append(stream, 'no_stream', [
        { type: 'test.opened', data: { n: 0, name: 'Ünïcode 😀', at: new Date(0) } },
        { type: 'test.noted', data: { n: 1, nested: { b: [1, 2.5, null], a: 'x' } } },
      ]),
    );
  await store.transact(context(tenantId), [streams[0]!], (tx) =>
    tx.append(streams[0]!, 1, [{ type: 'test.changed', data: { n: 2 } }]),
  );
  await store.transact(context(tenantId), [streams[1]!], (tx) =>
    tx.append(streams[1]!, 'any', [
      { type: 'test.changed', data: { n: 2 } },
      { type: 'test.changed', data: { n: 3 } },
      { type: 'test.changed', data: { n: 4 } },
    ]),
  );
  // Concurrent commands, each to a stream of its own.
  await Promise.all(
    streams.map((stream, i) =>
      store.transact(context(tenantId), [stream], (tx) =>
        tx.append(stream, 'any', [{ type: 'test.shared', data: { i } }]),
      ),
    ),
  );
  return streams;
}

async function rows(pool: pg.Pool, stream: string) {
  return (
    await pool.query<{ id: string; revision: number }>(
      'SELECT id, revision FROM events WHERE stream_id = $1 ORDER BY revision',
      [stream],
    )
  ).rows;
}

t.test('appends through the store verify, and each SQL tampering is found at its first broken link', async (t) => {
  const { pool } = await freshDatabase(t);
  const store = new PostgresEventStore(pool, []);
  const fresh = async () => {
    const tenantId = randomUUID();
    return { tenantId, streams: await writeLog(store, tenantId) };
  };

  const intact = await fresh();
  const clean = await verifyChains(pool, intact.tenantId);
  t.equal(clean.broken, null, 'an untouched log verifies');
  t.equal(clean.events, 6 + 1 + 3 + 3);
  t.equal(clean.streams, 3);
  t.match(clean.head, /^[0-9a-f]{64}$/);

  t.test('changing a row', async (t) => {
    const { tenantId, streams } = await fresh();
    const [, second] = await rows(pool, streams[0]!);
    await pool.query(`UPDATE events SET data = jsonb_set(data, '{n}', '7') WHERE id = $1`, [second!.id]);
    const result = await verifyChains(pool, tenantId);
    t.match(result.broken, { eventId: second!.id, reason: 'hash_mismatch', revision: 1 });
    await pool.query(`UPDATE events SET data = jsonb_set(data, '{n}', '1') WHERE id = $1`, [second!.id]);
    t.equal((await verifyChains(pool, tenantId)).broken, null, 'and verifies again once restored');
    const [first] = await rows(pool, streams[2]!);
    await pool.query(`UPDATE events SET created_at = created_at + interval '1 second' WHERE id = $1`, [first!.id]);
    t.match((await verifyChains(pool, tenantId)).broken, { eventId: first!.id, reason: 'hash_mismatch' }, 'its time');
  });

  t.test('deleting a row', async (t) => {
    const { tenantId, streams } = await fresh();
    const [, second, third] = await rows(pool, streams[1]!);
    await pool.query('DELETE FROM events WHERE id = $1', [second!.id]);
    t.match((await verifyChains(pool, tenantId)).broken, { eventId: third!.id, reason: 'revision_gap', revision: 2 });
  });

  t.test('inserting a row', async (t) => {
    const { tenantId, streams } = await fresh();
    const [, second] = await rows(pool, streams[2]!);
    // Moves the later events up one revision and slips a forged event in at revision 2.
    await pool.query('UPDATE events SET revision = revision + 100 WHERE stream_id = $1 AND revision > 1', [streams[2]]);
    await pool.query('UPDATE events SET revision = revision - 99 WHERE stream_id = $1 AND revision > 100', [
      streams[2],
    ]);
    const forged = randomUUID();
    await pool.query(
      `INSERT INTO events (id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at, hash)
       SELECT $1, stream_id, 2, 'test.forged', tenant_id, sandbox, '{}', metadata, created_at, hash FROM events WHERE id = $2`,
      [forged, second!.id],
    );
    // The moved events come first in the global order: the first broken link is the gap they left.
    const [, , , moved] = await rows(pool, streams[2]!);
    t.match((await verifyChains(pool, tenantId)).broken, { eventId: moved!.id, reason: 'revision_gap', revision: 3 });
    // Without the moved events, the forged one itself fails its link.
    await pool.query('DELETE FROM events WHERE stream_id = $1 AND revision > 2', [streams[2]]);
    t.match((await verifyChains(pool, tenantId)).broken, { eventId: forged, reason: 'hash_mismatch', revision: 2 });
  });

  t.test('reordering rows', async (t) => {
    const { tenantId, streams } = await fresh();
    const [, b, c] = await rows(pool, streams[1]!);
    // Swaps two events' revisions (through a free one, the pair being unique).
    await pool.query('UPDATE events SET revision = -1 WHERE id = $1', [b!.id]);
    await pool.query('UPDATE events SET revision = 1 WHERE id = $1', [c!.id]);
    await pool.query('UPDATE events SET revision = 2 WHERE id = $1', [b!.id]);
    // b, now revision 2, still comes before c in the global order: a gap there.
    t.match((await verifyChains(pool, tenantId)).broken, { reason: 'revision_gap', revision: 2, eventId: b!.id });

    const other = await fresh();
    // Revisions 1 and 2 of the first stream were written by different transactions.
    const [, x, y] = await rows(pool, other.streams[0]!);
    // Swaps two events' places in the global order (their transaction ids), revisions untouched.
    await pool.query(
      `UPDATE events SET tx_id = s.tx_id
         FROM (SELECT id, tx_id, position FROM events WHERE id IN ($1, $2)) AS s
        WHERE events.id IN ($1, $2) AND s.id <> events.id`,
      [x!.id, y!.id],
    );
    t.match((await verifyChains(pool, other.tenantId)).broken, { reason: 'revision_gap', eventId: y!.id });
  });

  t.test('a consistent rewrite or a cut tail shows against a kept anchor', async (t) => {
    const { tenantId, streams } = await fresh();
    const before = await verifyChains(pool, tenantId);
    const anchor = parseAnchor(anchorText(before.head, before.at))!;
    t.ok(anchor, 'the printed anchor parses');
    t.equal((await verifyChains(pool, tenantId, anchor)).broken, null, 'the log still matches its anchor');
    await store.transact(context(tenantId), [streams[0]!], (tx) =>
      tx.append(streams[0]!, 'any', [{ type: 'test.later', data: {} }]),
    );
    t.equal((await verifyChains(pool, tenantId, anchor)).broken, null, 'appending after the anchor is fine');

    const tail = (await rows(pool, streams[2]!)).at(-1)!;
    await pool.query('DELETE FROM events WHERE id = $1', [tail.id]);
    t.equal((await verifyChains(pool, tenantId)).broken, null, 'a cut tail leaves every chain intact…');
    t.match((await verifyChains(pool, tenantId, anchor)).broken, { reason: 'anchor_mismatch' }, '…but not the head');
  });

  t.test('a changed tenant or sandbox flag breaks the chain', async (t) => {
    const { tenantId, streams } = await fresh();
    const [first] = await rows(pool, streams[0]!);
    await pool.query('UPDATE events SET sandbox = true WHERE id = $1', [first!.id]);
    t.match((await verifyChains(pool, tenantId)).broken, { eventId: first!.id, reason: 'hash_mismatch' });
  });
});

t.test('the chain the database extends is the one the code computes, for any content and batching', async (t) => {
  const { pool } = await freshDatabase(t);
  const store = new PostgresEventStore(pool, []);
  const json = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      goodText(12),
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
      fc.constant(null),
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(goodText(6), tie('value'), { maxKeys: 3 }),
    ),
  })).value;
  const batches = fc.array(
    fc.record({
      stream: fc.integer({ min: 0, max: 2 }),
      expected: fc.constantFrom('revision', 'any'),
      data: fc.array(fc.dictionary(goodText(6), json, { maxKeys: 4 }), { minLength: 1, maxLength: 3 }),
    }),
    { minLength: 1, maxLength: 6 },
  );
  await checkProperty(
    t,
    'appends verify',
    fc.asyncProperty(batches, async (appends) => {
      const tenantId = randomUUID();
      const streams = [0, 1, 2].map(() => `prop-${randomUUID()}`);
      const revisions = new Map<string, number>();
      const said = new Map<string, unknown[]>();
      for (const append of appends) {
        const stream = streams[append.stream]!;
        const current = revisions.get(stream);
        const events = append.data.map((data) => ({ type: 'prop.happened', data }));
        await store.transact(context(tenantId), [stream], (tx) =>
          tx.append(stream, current === undefined ? 'no_stream' : append.expected === 'any' ? 'any' : current, events),
        );
        revisions.set(stream, (current ?? -1) + events.length);
        said.set(stream, [...(said.get(stream) ?? []), ...append.data]);
      }
      // Each event's data reads back as it was said (its JSON), in revision order.
      for (const [stream, data] of said) {
        const read = (await store.readStream(stream)).map((e) => e.data);
        if (!isDeepStrictEqual(read, JSON.parse(JSON.stringify(data)))) return false;
      }
      const result = await verifyChains(pool, tenantId);
      return result.broken === null && result.events === appends.reduce((n, a) => n + a.data.length, 0);
    }),
    40,
    // 278385909: a key "\u001f" read back as "\" by Node 24's JSON.parse after an earlier key "\\" (a V8 bug,
    // nodejs/node#63785); stored JSON is read through parseJsonText since (src/shared/json-text.ts).
    [278385909],
  );
});

t.test('the migration backfills the hashes of events written before it, and appends carry on the chains', async (t) => {
  const { pool } = await freshDatabase(t);
  // Back to the schema before the chain: a database of its own, migrated up to the version before it.
  await pool.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
  await migrate(
    pool,
    migrations.filter((m) => m.version < 40),
  );
  const tenantId = randomUUID();
  const streams = Array.from({ length: 30 }, (_, i) => `old-${String(i).padStart(2, '0')}`);
  // More than one backfill batch (1000), several events per stream, written as the old store wrote them.
  await pool.query(
    `INSERT INTO events (id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at)
     SELECT gen_random_uuid(), s, r, 'old.happened', $2, false, jsonb_build_object('r', r, 's', s),
            '{"actor":{"type":"system","name":"old"},"correlation_id":"c"}', now()
       FROM unnest($1::text[]) AS s, generate_series(0, 39) AS r
      ORDER BY r, s`,
    [streams, tenantId],
  );
  await migrate(pool);
  const nulls = await pool.query<{ n: number }>('SELECT count(*)::integer AS n FROM events WHERE hash IS NULL');
  t.equal(nulls.rows[0]!.n, 0, 'every event has its hash');
  const result = await verifyChains(pool, tenantId);
  t.equal(result.broken, null, 'the backfilled chains verify');
  t.equal(result.events, 30 * 40);

  const store = new PostgresEventStore(pool, []);
  await store.transact(context(tenantId), [streams[3]!], (tx) =>
    tx.append(streams[3]!, 39, [{ type: 'new.happened', data: {} }]),
  );
  t.equal((await verifyChains(pool, tenantId)).broken, null, 'an append after the backfill extends its chain');
  await t.rejects(
    pool.query(
      `INSERT INTO events (id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at)
       VALUES (gen_random_uuid(), 'x', 0, 't', gen_random_uuid(), false, '{}', '{}', now())`,
    ),
    /hash/,
    'an insert without a hash is refused',
  );
});

t.test('the code chains a new stream as the migration and the INSERT do', async (t) => {
  const content = {
    id: randomUUID(),
    streamId: 's',
    type: 't',
    tenantId: randomUUID(),
    sandbox: false,
    data: { b: 1, a: [true, 'é'] },
    metadata: { actor: { type: 'system' as const, name: 'n' }, correlation_id: 'c' },
    createdAt: new Date(0),
  };
  const [h0, h1] = chainFrom(GENESIS, 0, [contentDigest(content), contentDigest(content)]);
  t.not(h0!.toString('hex'), h1!.toString('hex'), 'the same content at another revision hashes differently');
  t.same(
    contentDigest({ ...content, data: { a: [true, 'é'], b: 1 } }),
    contentDigest(content),
    'key order does not matter (RFC 8785)',
  );
});
