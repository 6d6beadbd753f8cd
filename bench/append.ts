// Event-store append throughput on PostgreSQL, beside raw single-row insert transactions measured in the same run.
// Run: npm run bench:append   (uses DATABASE_URL, else an embedded PostgreSQL)
import { randomUUID } from 'node:crypto';
import { PostgresEventStore, readAllWith } from '../src/events/postgres-event-store.js';
import { START_OF_LOG, type GlobalPosition } from '../src/events/types.js';
import { benchDatabase, measure, plainPool, row } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
// Two pools of 45 (the store's and the raw baseline's) stay within PostgreSQL's default of 100 connections.
const db = await benchDatabase(45);
const store = new PostgresEventStore(db.pool, [], { namedStatements: true });
const tenantId = randomUUID();
const context = () => ({
  tenantId,
  sandbox: false,
  metadata: { actor: { type: 'system' as const, name: 'bench' }, correlation_id: randomUUID() },
  now: new Date(),
});
const data = {
  full_name: 'Bench Lead',
  email: 'bench@example.com',
  phone: '+919812345678',
  stage: { key: 'new', name: 'New' },
};

await db.pool.query(
  'CREATE TABLE raw_inserts (id uuid PRIMARY KEY, stream_id text NOT NULL, data jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())',
);
// The baseline: BEGIN, INSERT, COMMIT on a plain pg pool, one statement at a time.
const rawPool = plainPool(db.url, 45);
const rawInsert = async () => {
  const client = await rawPool.connect();
  try {
    await client.query('BEGIN');
    await client.query('INSERT INTO raw_inserts (id, stream_id, data) VALUES ($1, $2, $3)', [
      randomUUID(),
      `lead-${randomUUID()}`,
      JSON.stringify(data),
    ]);
    await client.query('COMMIT');
  } finally {
    client.release();
  }
};
// What the chain costs, measured in this run: the same events written by this benchmark's own code, without the
// store, each hash 32 zero bytes (which `audit verify` would report). A new stream: one INSERT; an existing one: the
// head's revision read under the stream's lock.
const ZERO_HASH = Buffer.alloc(32);
const appendUnchained = (stream: string | null, type: string) => async () => {
  const client = await db.pool.connect();
  try {
    await client.query('BEGIN');
    if (stream) await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [stream]);
    await client.query(
      `INSERT INTO events (id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at, hash)
       SELECT $1, $2, coalesce((SELECT max(revision) FROM events WHERE stream_id = $2), -1) + 1, $3, $4, false, $5, $6, $7, $8`,
      [
        randomUUID(),
        stream ?? `lead-${randomUUID()}`,
        type,
        tenantId,
        JSON.stringify(data),
        JSON.stringify(context().metadata),
        new Date(),
        ZERO_HASH,
      ],
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
};
const append = (to: PostgresEventStore) => () =>
  to.transact(context(), [], (tx) => tx.append(`lead-${randomUUID()}`, 'no_stream', [{ type: 'lead.created', data }]));
const appendToHotStream = (to: PostgresEventStore, stream: string) => () =>
  to.transact(context(), [stream], (tx) => tx.append(stream, 'any', [{ type: 'lead.updated', data }]));

console.log(`Append benchmark on ${db.where}, up to ${SECONDS} s per row\n`);
for (const concurrency of [1, 16, 64]) {
  const raw = await measure(1_000_000, concurrency, SECONDS, rawInsert);
  const unchained = await measure(1_000_000, concurrency, SECONDS, appendUnchained(null, 'lead.created'));
  const events = await measure(1_000_000, concurrency, SECONDS, append(store));
  console.log(row(`raw single-row insert transactions, ${concurrency} client(s)`, raw));
  console.log(row(`  appends without the hash chain (new stream each)`, unchained, raw.perSecond));
  console.log(row(`  event-store appends (new stream each), ${concurrency} client(s)`, events, raw.perSecond));
  console.log(`  the chain's cost: ${(100 * (1 - events.perSecond / unchained.perSecond)).toFixed(1)}% of throughput`);
}
for (const [name, run] of [
  ["without the hash chain (the bench's own insert)", appendUnchained(`lead-${randomUUID()}`, 'lead.updated')],
  ['with the hash chain', appendToHotStream(store, `lead-${randomUUID()}`)],
] as const) {
  const hot = await measure(1_000_000, 16, SECONDS, run);
  console.log(row(`appends to one existing stream, 16 clients, ${name}`, hot));
}

// Catch-up reading: a subscriber far behind reads the whole log in batches, in global order.
const READ_EVENTS = Number(process.env.BENCH_READ_EVENTS ?? 100_000);
const READ_BATCH = 500;
await db.pool.query('TRUNCATE events');
// Lead-sized events, three to a transaction id, positions falling against transaction ids as concurrent commits give.
await db.pool.query(
  `INSERT INTO events (position, tx_id, id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at, hash)
   OVERRIDING SYSTEM VALUE
   SELECT $1::bigint - g, (g / 3 + 1)::text::xid8, gen_random_uuid(), 'lead-' || g, 0, 'lead.created', $2, false,
          $3::jsonb, $4::jsonb, now(), sha256(int8send(g))
     FROM generate_series(1, $1::bigint) AS g`,
  [
    READ_EVENTS,
    tenantId,
    JSON.stringify({ payload: { ...data, padding: 'x'.repeat(900) } }),
    JSON.stringify(context().metadata),
  ],
);
await db.pool.query('VACUUM ANALYZE events');
const readLog = async (read: (after: GlobalPosition) => Promise<{ position: GlobalPosition }[]>) => {
  const started = performance.now();
  let after = START_OF_LOG;
  let count = 0;
  for (;;) {
    const batch = await read(after);
    if (batch.length === 0) break;
    count += batch.length;
    after = batch[batch.length - 1]!.position;
  }
  return { count, perSecond: count / ((performance.now() - started) / 1000) };
};
// The baseline: the same keyset query with pg and nothing else (no settled-horizon filter, rows left as pg gives them).
const rawRead = (after: GlobalPosition) =>
  rawPool
    .query<{ tx: string; position: number }>(
      `SELECT *, tx_id::text AS tx FROM events WHERE (tx_id, position) > ($1::xid8, $2::bigint)
        ORDER BY tx_id, position LIMIT $3`,
      [after.txId, after.position, READ_BATCH],
    )
    .then((r) => r.rows.map((row) => ({ position: { txId: row.tx, position: row.position } })));
console.log(`\nReading ${READ_EVENTS.toLocaleString('en')} events from the start in batches of ${READ_BATCH}`);
for (let round = 0; round < 3; round++) {
  const raw = await readLog(rawRead);
  const store = await readLog((after) => readAllWith(db.pool, after, READ_BATCH));
  if (store.count !== READ_EVENTS || raw.count !== READ_EVENTS) throw new Error('a read missed events');
  console.log(
    `  round ${round + 1}: raw keyset query ${raw.perSecond.toFixed(0).padStart(7)} events/s   readAll ${store.perSecond.toFixed(0).padStart(7)} events/s  (${((store.perSecond / raw.perSecond) * 100).toFixed(0)}% of raw; goal 100,000/s)`,
  );
}
await rawPool.end();
await db.close();
