import t from 'tap';
import { scriptsOn, WriteBatch } from '../../src/storage/write-batch.js';
import { freshDatabase } from '../support/db.js';
import { createTrickyTable, TRICKY_INSERT, TRICKY_ROWS } from '../support/tricky-values.js';

t.test('batched writes store exactly what parameterised writes store, and land with COMMIT', async (t) => {
  const { pool } = await freshDatabase(t);
  await createTrickyTable(pool);
  const tricky = TRICKY_ROWS;
  const insert = TRICKY_INSERT;

  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const batch = new WriteBatch(scriptsOn(client));
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
    const batch = new WriteBatch(scriptsOn(again));
    await batch.query(insert, ['new', 's', 1, 1, true, null, null, null, null, null]);
    await batch.query(insert, ['plain', 's', 1, 1, true, null, null, null, null, null]);
    await t.rejects(batch.commit(), /duplicate key/, 'the duplicate surfaces at commit');
    await again.query('ROLLBACK');
  } finally {
    again.release();
  }
  t.equal((await pool.query(`SELECT count(*)::int AS n FROM sample WHERE k = 'new'`)).rows[0].n, 0, 'the whole transaction rolled back');
});
