import type pg from 'pg';

/**
 * A table of every parameter type the service sends, and rows whose values are hard to write as SQL literals
 * (quotes, backslashes, `$1` and `$$` in text, array punctuation, JSON, bytes, NULLs).
 */
export const TRICKY_TABLE = `CREATE TABLE sample (k text PRIMARY KEY, s text, n numeric, i integer, b boolean, d timestamptz, j jsonb, a text[], u uuid[], x bytea)`;
export const TRICKY_INSERT =
  'INSERT INTO sample (k, s, n, i, b, d, j, a, u, x) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)';
export const TRICKY_ROWS: unknown[][] = [
  [
    'plain',
    'hello',
    1.5,
    7,
    true,
    new Date('2026-11-01T10:00:00.123Z'),
    JSON.stringify({ a: "it's", b: ['\\', '"q"'], c: null }),
    ['x', 'y'],
    ['00000000-0000-4000-8000-000000000001'],
    Buffer.from([0, 1, 255]),
  ],
  [
    'quotes',
    `O'Brien \\ "x" $1 $$ --`,
    -0.25,
    0,
    false,
    new Date(0),
    JSON.stringify([1, 'two', { three: 3 }]),
    ['a,b', 'c"d', 'e\\f', 'NULL', ''],
    [],
    Buffer.alloc(0),
  ],
  ['nulls', null, null, null, null, null, null, null, null, null],
];

export async function createTrickyTable(pool: pg.Pool): Promise<void> {
  await pool.query(TRICKY_TABLE);
}
