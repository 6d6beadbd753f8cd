import { createSecretKey, randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { personOfNewStream } from '../../src/domain/streams.js';
import { PersonalDataKeys } from '../../src/events/personal-data.js';
import { rewriteDerivedKeyRows } from '../../src/events/person-key-rows.js';
import { PostgresEventStore } from '../../src/events/postgres-event-store.js';
import { WrongExpectedRevisionError } from '../../src/events/types.js';
import { SecretBox } from '../../src/shared/secret-box.js';
import { freshDatabase } from '../support/db.js';
import { context } from '../support/event-store-scenarios.js';
import { checkProperty } from '../support/properties.js';
import { recordSql, transactions } from '../support/sql-recorder.js';

/*
 * The event store with sealing on, against PostgreSQL: a new person's stream writes its data key row in the events'
 * own statement, keys are stored as seeds, keys stored the earlier way (wrapped) keep working, and two writers of one
 * new stream get the store's conflict, whichever table refuses the second.
 */

const box = new SecretBox(Buffer.alloc(32, 5));

/** Makes keys as the version before seeds did: a random key wrapped with the person-key box (`v2:`). */
class WrappedKeys extends PersonalDataKeys {
  override newKey(): { key: KeyObject; stored: string } {
    const key = randomBytes(32);
    return { key: createSecretKey(key), stored: box.personKeys.seal(key.toString('base64')) };
  }
}

const created = (name: string) => ({
  type: 'lead.created',
  data: { payload: { id: randomUUID(), full_name: name, phone: '+919812345678', visa_type: 'student' }, message: null },
});

async function keyRows(pool: import('pg').Pool, streamId: string) {
  const result = await pool.query<{ wrapped_key: string; person_id: string }>(
    'SELECT wrapped_key, person_id FROM personal_data_keys WHERE stream_id = $1',
    [streamId],
  );
  return result.rows;
}

t.test('a new lead stream: its key row goes in the events statement, and the events open on every read', async (t) => {
  const { pool } = await freshDatabase(t);
  const store = new PostgresEventStore(pool, [], {
    personOf: personOfNewStream,
    personal: PersonalDataKeys.of(box),
  });
  const leadId = randomUUID();
  const stream = `lead-${leadId}`;
  const sent = recordSql(t);
  await store.transact(context(), [], (tx) => tx.append(stream, 'no_stream', [created('Priya Sharma')]));
  const [tx] = transactions(sent);
  t.same(
    tx!.map((s) => s.text.trim().split(/\s+/).slice(0, 3).join(' ')),
    ['BEGIN', 'WITH key_row AS', 'COMMIT'],
    'one statement writes the key row and the events',
  );
  const rows = await keyRows(pool, stream);
  t.equal(rows.length, 1);
  t.match(rows[0]!.wrapped_key, /^v2:/, 'the row holds the key wrapped');
  t.equal(rows[0]!.person_id, leadId, 'filed under the lead');
  const stored = await pool.query<{ data: string }>('SELECT data::text FROM events WHERE stream_id = $1', [stream]);
  t.notMatch(stored.rows[0]!.data, /Priya|9812345678/, 'nothing personal in the clear');
  const [event] = await store.readStream(stream);
  t.match(event!.data, { payload: { full_name: 'Priya Sharma', phone: '+919812345678' } }, 'read back opened');
  const fresh = new PostgresEventStore(pool, [], {
    personOf: personOfNewStream,
    personal: PersonalDataKeys.of(box),
  });
  t.match(
    (await fresh.readStream(stream))[0]!.data,
    { payload: { full_name: 'Priya Sharma' } },
    'by another process too',
  );

  const plain = await store.transact(context(), [], (tx) =>
    tx.append(`test-${randomUUID()}`, 'no_stream', [{ type: 'test.happened', data: { n: 1 } }]),
  );
  t.same(await keyRows(pool, plain[0]!.streamId), [], 'a stream with no person gets no key row');
});

t.test('a sealed event of 2 to 4 KB stays in the events heap (no TOAST row, no compression)', async (t) => {
  const { pool } = await freshDatabase(t);
  const store = new PostgresEventStore(pool, [], {
    personOf: personOfNewStream,
    personal: PersonalDataKeys.of(box),
  });
  const stream = `lead-${randomUUID()}`;
  // Random text does not compress, as ciphertext does not: the row is kept as written or moved out of line.
  const event = created(randomBytes(1100).toString('base64'));
  await store.transact(context(), [], (tx) => tx.append(stream, 'no_stream', [event]));
  const size = await pool.query<{ bytes: number; toast: string }>(
    `SELECT pg_column_size(e.*) AS bytes, (SELECT reltoastrelid::regclass::text FROM pg_class WHERE relname = 'events') AS toast
       FROM events e WHERE stream_id = $1`,
    [stream],
  );
  const { bytes, toast } = size.rows[0]!;
  t.ok(bytes > 2100 && bytes < 4000, `the row is over the default 2 KB threshold (${bytes} B)`);
  const moved = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${toast}`);
  t.equal(moved.rows[0]!.n, 0, 'nothing moved to the TOAST table');
  t.match((await store.readStream(stream))[0]!.data, event.data, 'and it reads back opened');
});

t.test('keys wrapped by the earlier version keep sealing and opening their streams', async (t) => {
  const { pool } = await freshDatabase(t);
  const before = new PostgresEventStore(pool, [], {
    personOf: personOfNewStream,
    personal: WrappedKeys.of(box),
  });
  const stream = `lead-${randomUUID()}`;
  await before.transact(context(), [], (tx) => tx.append(stream, 'no_stream', [created('Ana Old')]));
  t.match((await keyRows(pool, stream))[0]!.wrapped_key, /^v2:/);
  const now = new PostgresEventStore(pool, [], {
    personOf: personOfNewStream,
    personal: PersonalDataKeys.of(box),
  });
  await now.transact(context(), [stream], (tx) =>
    tx.append(stream, 0, [{ type: 'lead.note_added', data: { at: new Date().toISOString(), note: 'called Ana' } }]),
  );
  const events = await now.readStream(stream);
  t.match(
    events.map((e) => e.data),
    [{ payload: { full_name: 'Ana Old' } }, { note: 'called Ana' }],
    'both the old event and the one sealed now with the same wrapped key open',
  );
  const notes = await pool.query<{ data: string }>('SELECT data::text FROM events WHERE stream_id = $1', [stream]);
  t.notMatch(notes.rows.map((r) => r.data).join(), /Ana|called/, 'both sealed');
});

t.test(
  'key rows of the derived formats (s1:, s2:) are rewritten wrapped at start-up; their events still open',
  async (t) => {
    const { pool } = await freshDatabase(t);
    const seed = randomBytes(16);
    const nonce = randomBytes(12);
    const derived = [
      { stored: 's1:' + seed.toString('base64'), key: box.personKeySeeds.derive(seed) },
      { stored: 's2:' + nonce.toString('base64'), key: box.personKeyNonces.derive(nonce) },
    ];
    const streams = derived.map(() => `lead-${randomUUID()}`);
    for (const [i, { stored, key }] of derived.entries()) {
      // As the version before wrote them: the events sealed under the derived key, the row holding what derives it.
      const before = new PostgresEventStore(pool, [], {
        personOf: personOfNewStream,
        personal: new (class extends PersonalDataKeys {
          override newKey() {
            return { key: createSecretKey(key), stored };
          }
        })(box.personKeys),
      });
      await before.transact(context(), [], (tx) => tx.append(streams[i]!, 'no_stream', [created(`Person ${i}`)]));
    }
    const erased = `lead-${randomUUID()}`;
    await pool.query(
      `INSERT INTO personal_data_keys (stream_id, tenant_id, person_id, wrapped_key, created_at, erased_at)
     VALUES ($1, $2, $3, NULL, now(), now())`,
      [erased, randomUUID(), erased.slice(5)],
    );
    t.equal(await rewriteDerivedKeyRows(pool, PersonalDataKeys.of(box)), 2, 'both derived rows rewritten');
    for (const stream of streams) t.match((await keyRows(pool, stream))[0]!.wrapped_key, /^v2:/, 'now wrapped');
    t.equal((await keyRows(pool, erased))[0]!.wrapped_key, null, 'an erased row stays erased');
    t.equal(await rewriteDerivedKeyRows(pool, PersonalDataKeys.of(box)), 0, 'nothing left the second time');
    const now = new PostgresEventStore(pool, [], { personOf: personOfNewStream, personal: PersonalDataKeys.of(box) });
    for (const [i, stream] of streams.entries())
      t.match((await now.readStream(stream))[0]!.data, { payload: { full_name: `Person ${i}` } }, 'its events open');
  },
);

t.test('a new stream that exists already is the store conflict, naming the stream', async (t) => {
  const { pool } = await freshDatabase(t);
  const store = new PostgresEventStore(pool, [], {
    personOf: personOfNewStream,
    personal: PersonalDataKeys.of(box),
  });
  const stream = `lead-${randomUUID()}`;
  await store.transact(context(), [], (tx) => tx.append(stream, 'no_stream', [created('First')]));
  const conflict: unknown = await store
    .transact(context(), [], (tx) => tx.append(stream, 'no_stream', [created('Second')]))
    .catch((error: unknown) => error);
  t.ok(conflict instanceof WrongExpectedRevisionError, 'refused as a wrong expected revision, not a raw SQL error');
  t.match(conflict, { streamId: stream, expected: 'no_stream' });
  t.equal((await keyRows(pool, stream)).length, 1, 'one key row');
  t.equal((await store.readStream(stream)).length, 1, 'the first stream alone');
});

t.test('property: concurrent creators of one new stream: one wins, the others get the conflict', async (t) => {
  const { pool } = await freshDatabase(t, undefined, 12);
  const store = new PostgresEventStore(pool, [], {
    personOf: personOfNewStream,
    personal: PersonalDataKeys.of(box),
  });
  await checkProperty(
    t,
    'concurrent new-stream creators',
    fc.asyncProperty(fc.integer({ min: 2, max: 8 }), fc.boolean(), async (writers, personal) => {
      const stream = personal ? `lead-${randomUUID()}` : `test-${randomUUID()}`;
      const outcomes = await Promise.allSettled(
        Array.from({ length: writers }, (_, i) =>
          store.transact(context(), [], (tx) =>
            tx.append(stream, 'no_stream', [
              personal ? created(`Writer ${i}`) : { type: 'test.happened', data: { i } },
            ]),
          ),
        ),
      );
      const won = outcomes.filter((o) => o.status === 'fulfilled').length;
      const conflicts = outcomes.filter(
        (o) =>
          o.status === 'rejected' && o.reason instanceof WrongExpectedRevisionError && o.reason.streamId === stream,
      ).length;
      const rows = await keyRows(pool, stream);
      return won === 1 && conflicts === writers - 1 && rows.length === (personal ? 1 : 0);
    }),
    25,
  );
});
