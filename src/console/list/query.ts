import type { Queryable } from '../../storage/postgres.js';
import type { Bound, Direction, ListParams } from './params.js';
import type { ListSpec } from './spec.js';
import type { Where } from './where.js';

/** Up to this many matching rows are counted exactly; above it the planner's estimate is shown as "about N". */
export const EXACT_COUNT_LIMIT = 10_000;

export interface Count {
  n: number;
  exact: boolean;
}

export interface PageOfRows<Row> {
  rows: Row[];
  /** The places of the first and last rows shown, for the links to the pages before and after. */
  first?: { value: string; id: string };
  last?: { value: string; id: string };
  hasPrevious: boolean;
  hasNext: boolean;
}

interface Placed {
  list_sort_value: string;
  list_id: string;
}

/** The order's expression pair and the comparison that reads rows past a place, in the direction read. */
function keyset<Row>(spec: ListSpec<Row>, p: Pick<ListParams<Row>, 'column'>) {
  const key = `(${p.column.sort.sql}), (${spec.id.sql})`;
  const past = (where: Where, place: { value: string; id: string }, dir: Direction, inclusive = false) => {
    const value = where.param(place.value);
    const id = where.param(place.id);
    const op = (dir === 'asc' ? '>' : '<') + (inclusive ? '=' : '');
    where.when(`(${key}) ${op} (${value}::${p.column.sort.type}, ${id}::${spec.id.type})`);
  };
  return { key, past };
}

const flip = (dir: Direction): Direction => (dir === 'asc' ? 'desc' : 'asc');

/** Rows in the order from a place on (or from the start), as many as asked, each with its place. */
async function readOrdered<Row>(
  sql: Queryable,
  spec: ListSpec<Row>,
  filtered: Where,
  p: Pick<ListParams<Row>, 'column'>,
  dir: Direction,
  limit: number,
  from?: { value: string; id: string },
): Promise<(Row & Placed)[]> {
  const where = filtered.copy();
  const k = keyset(spec, p);
  if (from) k.past(where, from, dir);
  const limitParam = where.param(limit);
  const result = await sql.query<Row & Placed>(
    `SELECT ${spec.select}, (${p.column.sort.sql})::text AS list_sort_value, (${spec.id.sql})::text AS list_id
       FROM ${spec.from} WHERE ${where.sql}
      ORDER BY ${p.column.sort.sql} ${dir}, ${spec.id.sql} ${dir} LIMIT ${limitParam}`,
    where.values,
  );
  return result.rows;
}

/** Whether any row lies beyond a place, in a direction (a page link's neighbour exists). */
async function anyPast<Row>(
  sql: Queryable,
  spec: ListSpec<Row>,
  filtered: Where,
  p: Pick<ListParams<Row>, 'column'>,
  dir: Direction,
  place: { value: string; id: string },
): Promise<boolean> {
  return (await readOrdered(sql, spec, filtered, p, dir, 1, place)).length > 0;
}

const placeOf = (row: Placed | undefined) => (row ? { value: row.list_sort_value, id: row.list_id } : undefined);

/**
 * One page by keyset: the rows after (or before) a place in the order, never an OFFSET, so a page costs the same
 * deep in the list as at its start, and rows inserted or changed while someone pages neither repeat nor vanish
 * (docs/decisions.md, "Lists: one component").
 */
export async function readPage<Row>(
  sql: Queryable,
  spec: ListSpec<Row>,
  filtered: Where,
  p: Pick<ListParams<Row>, 'column' | 'dir' | 'size' | 'bound'>,
): Promise<PageOfRows<Row>> {
  const bound: Bound | undefined = p.bound;
  const backwards = bound?.side === 'before';
  const readDir = backwards ? flip(p.dir) : p.dir;
  const read = await readOrdered(sql, spec, filtered, p, readDir, p.size + 1, bound);
  const more = read.length > p.size;
  const rows = read.slice(0, p.size);
  if (backwards) rows.reverse();
  const first = placeOf(rows[0]);
  const last = placeOf(rows.at(-1));
  let hasPrevious = backwards ? more : false;
  let hasNext = backwards ? false : more;
  // The other side of a page reached by a link: a row past its first (or last) shown row, or past the link's place.
  if (bound && !backwards) hasPrevious = await anyPast(sql, spec, filtered, p, flip(p.dir), first ?? bound);
  if (bound && backwards) hasNext = await anyPast(sql, spec, filtered, p, p.dir, last ?? bound);
  return { rows: rows.map(stripPlace), first, last, hasPrevious, hasNext };
}

function stripPlace<Row>(row: Row & Placed): Row {
  const { list_sort_value: _v, list_id: _i, ...rest } = row;
  return rest as Row;
}

/** How many rows match: exactly up to EXACT_COUNT_LIMIT, else the planner's estimate (never below the limit). */
export async function countMatching<Row>(sql: Queryable, spec: ListSpec<Row>, filtered: Where): Promise<Count> {
  const where = filtered.copy();
  const cap = where.param(EXACT_COUNT_LIMIT + 1);
  const counted = await sql.query<{ n: string }>(
    `SELECT count(*) AS n FROM (SELECT 1 FROM ${spec.from} WHERE ${where.sql} LIMIT ${cap}) matching`,
    where.values,
  );
  const n = Number(counted.rows[0]!.n);
  if (n <= EXACT_COUNT_LIMIT) return { n, exact: true };
  const plan = await sql.query<{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }>(
    `EXPLAIN (FORMAT JSON) SELECT 1 FROM ${spec.from} WHERE ${filtered.sql}`,
    filtered.values,
  );
  const estimate = plan.rows[0]!['QUERY PLAN'][0].Plan['Plan Rows'];
  return { n: Math.max(EXACT_COUNT_LIMIT + 1, Math.round(estimate)), exact: false };
}

/**
 * Every matching row in the list's order, in batches read by keyset (never the whole list at once, never an
 * OFFSET): what a CSV file and "all N matching" read.
 */
export async function* eachBatch<Row>(
  sql: Queryable,
  spec: ListSpec<Row>,
  filtered: Where,
  p: Pick<ListParams<Row>, 'column' | 'dir'>,
  batch = 500,
): AsyncGenerator<Row[]> {
  let from: { value: string; id: string } | undefined;
  for (;;) {
    const rows = await readOrdered(sql, spec, filtered, p, p.dir, batch, from);
    if (rows.length === 0) return;
    from = placeOf(rows.at(-1));
    yield rows.map(stripPlace);
    if (rows.length < batch) return;
  }
}
