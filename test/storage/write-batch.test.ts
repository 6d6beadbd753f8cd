import t from 'tap';
import { WriteBatch } from '../../src/storage/write-batch.js';
import { freshDatabase } from '../support/db.js';

t.test('batched writes store exactly what parameterised writes store, and land with COMMIT', async (t) => {
  const { pool } = await freshDatabase(t);
  await pool.query(`CREATE TABLE sample (k text PRIMARY KEY, s text, n numeric, i integer, b boolean, d timestamptz, j jsonb, a text[], u uuid[], x bytea)`);
  const tricky = [
    ['plain', 'hello', 1.5, 7, true, new Date('2026-11-01T10:00:00.123Z'), JSON.stringify({ a: "it's", b: ['\\', '"q"'], c: null }), ['x', 'y'], ['00000000-0000-4000-8000-000000000001'], Buffer.from([0, 1, 255])],
    ['quotes', `O'Brien \\ "x" $1 $$ --`, -0.25, 0, false, new Date(0), JSON.stringify([1, 'two', { three: 3 }]), ['a,b', 'c"d', 'e\\f', 'NULL', ''], [], Buffer.alloc(0)],
    ['nulls', null, null, null, null, null, null, null, null, null],
  ] as const;
  const insert = 'INSERT INTO sample (k, s, n, i, b, d, j, a, u, x) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)';

  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const batch = new WriteBatch(client);
    for (const row of tricky) await batch.query(insert, [...row]);
    const before = await pool.query('SELECT count(*)::int AS n FROM sample');
    t.equal(before.rows[0].n, 0, 'nothing is visible before COMMIT');
    await batch.commit();
  } finally {
    client.release();
  }
  const batched = (await pool.query('SELECT * FROM sample ORDER BY k')).rows;

  await pool.query('TRUNCATE sample');
  for (const row of tricky) await pool.query(insert, [...row]);
  const direct = (await pool.query('SELECT * FROM sample ORDER BY k')).rows;
  t.same(batched, direct, 'every value, quotes, backslashes, arrays, JSON, bytes and NULLs included');

  // A failing batched write fails the commit and leaves nothing behind.
  const again = await pool.connect();
  try {
    await again.query('BEGIN');
    const batch = new WriteBatch(again);
    await batch.query(insert, ['new', 's', 1, 1, true, null, null, null, null, null]);
    await batch.query(insert, ['plain', 's', 1, 1, true, null, null, null, null, null]);
    await t.rejects(batch.commit(), /duplicate key/, 'the duplicate surfaces at commit');
    await again.query('ROLLBACK');
  } finally {
    again.release();
  }
  t.equal((await pool.query(`SELECT count(*)::int AS n FROM sample WHERE k = 'new'`)).rows[0].n, 0, 'the whole transaction rolled back');
});
