import fc from 'fast-check';
import t from 'tap';
import { createPool, queryPrepared } from '../../src/storage/postgres.js';
import { inTransaction } from '../../src/storage/transaction.js';
import { freshDatabase } from '../support/db.js';
import { checkProperty } from '../support/properties.js';

// queryPrepared: pg's named statements, parsed and planned once per connection. Past five runs PostgreSQL may switch
// a prepared statement to a generic plan; the answers must not change with it, and a transaction's plain statement
// of the same text on the same connection must not disturb it.

const TEXT = `SELECT coalesce(sum(x), 0)::int AS total, count(*)::int AS n
                FROM unnest($1::int[]) AS x WHERE x > $2`;

t.test('a prepared statement is planned once per connection and answers as the plain one, run after run', async (t) => {
  const { url } = await freshDatabase(t, undefined, 2);
  const pool = createPool(url, 1);
  t.teardown(() => pool.end());
  await checkProperty(
    t,
    'prepared equals plain',
    fc.asyncProperty(
      fc.array(fc.integer({ min: -1000, max: 1000 }), { maxLength: 40 }),
      fc.integer(),
      async (xs, floor) => {
        const prepared = await queryPrepared<{ total: number; n: number }>(pool, TEXT, [xs, floor]);
        const plain = await pool.query<{ total: number; n: number }>(TEXT, [xs, floor]);
        const kept = xs.filter((x) => x > floor);
        return (
          prepared.rows[0]!.n === kept.length &&
          prepared.rows[0]!.total === kept.reduce((a, b) => a + b, 0) &&
          prepared.rows[0]!.total === plain.rows[0]!.total
        );
      },
    ),
    60,
  );
  // A transaction runs the same text, unnamed, on the same (only) connection.
  const inside = await inTransaction(pool, (tx) => tx.query<{ n: number }>(TEXT, [[1, 2, 3], 1]));
  t.equal(inside.rows[0]!.n, 2, 'a transaction runs the same text on the same connection');
  t.equal((await queryPrepared<{ n: number }>(pool, TEXT, [[5], 0])).rows[0]!.n, 1, 'and the prepared one still runs');
  const statements = await pool.query<{ name: string; runs: number }>(
    `SELECT name, (generic_plans + custom_plans)::int AS runs FROM pg_prepared_statements
      WHERE statement = $1 ORDER BY name`,
    [TEXT],
  );
  t.equal(statements.rows.length, 1, 'one prepared statement on the connection: the transaction prepared none');
  t.ok(
    statements.rows.some((s) => s.runs >= 61),
    'ours was parsed once and run every time on that connection',
  );
});
