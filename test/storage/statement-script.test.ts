import t from 'tap';
import type pg from 'pg';
import { quoteLiteral, runScript } from '../../src/storage/statement-script.js';
import { freshDatabase } from '../support/db.js';
import { createTrickyTable, TRICKY_INSERT, TRICKY_ROWS } from '../support/tricky-values.js';

/** Records the texts a real client sends (the client still sends them). */
function recordTexts(client: pg.PoolClient): string[] {
  const texts: string[] = [];
  const original = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    texts.push(typeof args[0] === 'string' ? args[0] : JSON.stringify(args[0]));
    return original(...args);
  };
  return texts;
}

const preparedNames = async (client: pg.PoolClient) =>
  (await client.query<{ name: string }>(`SELECT name FROM pg_prepared_statements WHERE name LIKE 'vcrm\\_%' ORDER BY name`)).rows.map((r) => r.name);

t.test('statements in one script read and write exactly what parameterised queries do', async (t) => {
  const { pool } = await freshDatabase(t);
  await createTrickyTable(pool);
  const rows = TRICKY_ROWS;
  const insert = TRICKY_INSERT;
  const select = 'SELECT * FROM sample WHERE k = ANY($1::text[]) ORDER BY k';
  const client = await pool.connect();
  try {
    const read = await runScript(client, [...rows.map((values) => ({ text: insert, values })), { text: select, values: [rows.map((r) => r[0])] }]);
    t.equal(read.rows.length, 3, 'the last statement answers');
    const direct = await pool.query(select, [rows.map((r) => r[0])]);
    t.same(read.rows, direct.rows, 'rows read through a script parse like rows of a parameterised query');
    await pool.query('TRUNCATE sample');
    for (const values of rows) await pool.query(insert, values);
    t.same((await pool.query(select, [rows.map((r) => r[0])])).rows, read.rows, 'and the script stored what parameterised inserts store');
  } finally {
    client.release();
  }
});

t.test('a statement is prepared once per connection, and stays usable after failures', async (t) => {
  const { pool } = await freshDatabase(t, undefined, 2);
  await pool.query('CREATE TABLE items (id integer PRIMARY KEY, note text)');
  const insert = 'INSERT INTO items (id, note) VALUES ($1, $2)';
  const client = await pool.connect();
  const texts = recordTexts(client);
  try {
    await runScript(client, [{ text: 'BEGIN', values: [] }, { text: insert, values: [1, 'one'] }, { text: 'COMMIT', values: [] }]);
    t.match(texts[0], /^PREPARE vcrm_\w+ AS INSERT INTO items/, 'the first use prepares');
    await runScript(client, [{ text: insert, values: [2, 'two'] }]);
    t.notMatch(texts[1], /PREPARE/, 'later uses only execute');
    t.equal((await preparedNames(client)).length, 1);

    // A statement failing after the PREPARE: PREPARE is not undone, so the next use must not prepare again.
    const other = 'UPDATE items SET note = $2 WHERE id = $1';
    await t.rejects(runScript(client, [{ text: other, values: [1, 'uno'] }, { text: insert, values: [1, 'again'] }]), /duplicate key/);
    await runScript(client, [{ text: other, values: [2, 'dos'] }]);
    t.same((await pool.query('SELECT note FROM items ORDER BY id')).rows, [{ note: 'one' }, { note: 'dos' }], 'the failed script changed nothing, the next ran');

    // A syntax error means the server ran nothing: the statement is prepared again next time.
    const third = 'DELETE FROM items WHERE id = $1';
    await t.rejects(runScript(client, [{ text: third, values: [2] }, { text: 'SELEC oops', values: [] }]), /syntax error/);
    t.equal((await preparedNames(client)).length, 2, 'nothing was prepared by the rejected text');
    await runScript(client, [{ text: third, values: [2] }]);
    t.equal((await pool.query('SELECT count(*)::int AS n FROM items')).rows[0].n, 1, 'prepared again and run');
    t.equal((await preparedNames(client)).length, 3);

    // Statements dropped behind its back (DEALLOCATE): one call fails, the next prepares again.
    await client.query('DEALLOCATE ALL');
    await t.rejects(runScript(client, [{ text: insert, values: [7, 'seven'] }]), /does not exist/);
    await runScript(client, [{ text: insert, values: [7, 'seven'] }]);
    t.equal((await pool.query('SELECT count(*)::int AS n FROM items WHERE id = 7')).rows[0].n, 1, 'prepared again and run');
  } finally {
    client.release();
  }
  // Another connection prepares its own.
  const second = await pool.connect();
  const held = await pool.connect().catch(() => undefined);
  try {
    const fresh = (await preparedNames(second)).length === 0 ? second : held!;
    t.same(await preparedNames(fresh), [], 'a connection that ran nothing has nothing prepared');
    await runScript(fresh, [{ text: insert, values: [5, 'five'] }]);
    t.equal((await preparedNames(fresh)).length, 1, 'and prepares on its first use');
  } finally {
    second.release();
    held?.release();
  }
});

t.test("quoteLiteral writes what pg's escapeLiteral writes, and PostgreSQL reads back the same text", async (t) => {
  const { pool } = await freshDatabase(t);
  const client = await pool.connect();
  try {
    const texts = ['', 'plain', "O'Brien", "''", '\\', 'a\\b', "\\'", `E'x'`, '$1 $$ --', 'ünïcødé ✓ 𝄞 \u2028', '{"a":"it\'s","b":["\\\\","\\"q\\""]}'];
    // Named by index: a U+2028 in a test name would break the TAP stream.
    texts.forEach((text, i) => t.equal(quoteLiteral(text), client.escapeLiteral(text), `same literal for text ${i}`));
    const read = await client.query<{ v: string }>(texts.map((text) => `SELECT ${quoteLiteral(text)}::text AS v`).join(' UNION ALL '));
    t.same(
      read.rows.map((r) => r.v),
      texts,
      'every text reads back unchanged',
    );
  } finally {
    client.release();
  }
});
