import type pg from 'pg';
import t from 'tap';
import { GrowingTables } from '../../src/storage/growing-tables.js';
import { freshDatabase } from '../support/db.js';

// What an import meets: one transaction fills a table from empty while a prepared lookup of many keys runs after
// every batch. The generic plan PostgreSQL settles on while the table is small must not stay once it is large.

const TENANT = '00000000-0000-4000-8000-000000000001';
const LOOKUP = 'SELECT stream_id FROM events WHERE stream_id = ANY($1::text[]) AND tenant_id <> $2 LIMIT 1';
const KEYS = Array.from({ length: 500 }, (_, i) => `lead-${i}`);

async function insertEvents(client: pg.PoolClient, from: number, count: number): Promise<void> {
  await client.query(
    `INSERT INTO events (id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at, hash)
     SELECT gen_random_uuid(), 'lead-' || g, 0, 'lead.created', $3, false, '{}', '{}', now(), sha256(g::text::bytea)
       FROM generate_series($1::int, $1::int + $2::int - 1) g`,
    [from, count, TENANT],
  );
}

/** The plan the lookup's prepared statement runs now (what a named statement of the import would run). */
async function lookupPlan(client: pg.PoolClient): Promise<string> {
  const plan = await client.query<{ 'QUERY PLAN': unknown }>(
    `EXPLAIN (FORMAT JSON) EXECUTE growing_lookup('{${KEYS.join(',')}}', '${TENANT}')`,
  );
  return JSON.stringify(plan.rows[0]!['QUERY PLAN']);
}

t.test('a lookup planned over a few rows is planned again once its table has grown', async (t) => {
  const { pool } = await freshDatabase(t, undefined, 2);
  const client = await pool.connect();
  t.teardown(() => client.release());
  await client.query('BEGIN');
  const growing = new GrowingTables(['events', 'personal_data_keys']);
  const lookup = () => client.query({ name: 'growing_lookup', text: LOOKUP, values: [KEYS, TENANT] });

  await insertEvents(client, 0, 500);
  t.equal(await growing.written(client, 500), false, 'nothing analyzed below the first threshold');
  for (let run = 0; run < 6; run++) await lookup();
  await insertEvents(client, 500, 60_000);
  t.match(await lookupPlan(client), /Seq Scan/, 'the plan chosen over 500 rows scans the whole table at 60,500');

  t.equal(await growing.written(client, 60_500), true, 'the rows written have doubled: analyzed');
  for (let run = 0; run < 6; run++) await lookup();
  const plan = await lookupPlan(client);
  t.notMatch(plan, /Seq Scan/, 'planned again: the index is used');
  t.match(plan, /events_stream_revision/);
  const counted = await client.query<{ reltuples: number }>(`SELECT reltuples FROM pg_class WHERE relname = 'events'`);
  t.equal(counted.rows[0]!.reltuples, 60_500, "ANALYZE counted the transaction's own rows");

  t.equal(await growing.written(client, 100_000), false, 'not again before the rows double once more');
  t.equal(await growing.written(client, 140_000), true, 'again once they have');
  await client.query('ROLLBACK');
});
