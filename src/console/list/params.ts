import { Type } from 'typebox';
import type { Column, ListSpec, Query } from './spec.js';

export const PAGE_SIZES = [25, 50, 100, 200] as const;
export const DEFAULT_PAGE_SIZE = 50;

/** The query-string parts every list reads besides its filters (spread into a route's querystring schema). */
export const LIST_QUERY = {
  sort: Type.Optional(Type.String({ maxLength: 40 })),
  dir: Type.Optional(Type.String({ maxLength: 4 })),
  size: Type.Optional(Type.String({ maxLength: 4 })),
  after: Type.Optional(Type.String({ maxLength: 2000 })),
  before: Type.Optional(Type.String({ maxLength: 2000 })),
  select: Type.Optional(Type.String({ maxLength: 4 })),
};

export type Direction = 'asc' | 'desc';

/** Where a page starts: after or before a row's place in the order (its sort value as text, and its id). */
export interface Bound {
  side: 'after' | 'before';
  value: string;
  id: string;
}

export interface ListParams<Row> {
  column: Column<Row> & { sort: NonNullable<Column<Row>['sort']> };
  dir: Direction;
  size: number;
  bound?: Bound;
  errors: Record<string, string>;
}

/**
 * A page link's place: the sort, its direction, the value and the id, as base64url JSON. It holds no secret and
 * reaches SQL only as parameters; a place of another sort is refused rather than read under the wrong order.
 */
export function encodePlace(sort: string, dir: Direction, value: string, id: string): string {
  return Buffer.from(JSON.stringify([sort, dir, value, id])).toString('base64url');
}

function decodePlace(text: string, sort: string, dir: Direction): { value: string; id: string } | null {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (!Array.isArray(parsed) || parsed.length !== 4 || !parsed.every((p) => typeof p === 'string')) return null;
    const [s, d, value, id] = parsed as string[];
    if (s !== sort || d !== dir || value!.length > 500 || id!.length > 100) return null;
    return { value: value!, id: id! };
  } catch {
    return null;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A page link's value must cast to the sort's type, or the query would fail: checked here, refused in words. */
function castable(type: string, value: string): boolean {
  switch (type) {
    case 'integer':
      return /^-?\d{1,10}$/.test(value);
    case 'numeric':
      return /^-?\d{1,30}(\.\d{1,30})?$/.test(value);
    case 'timestamptz':
      return !Number.isNaN(Date.parse(value.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00')));
    default:
      return true;
  }
}

/** The sort, direction, page size and place a list's query string asks for; what it cannot read, refused by name. */
export function listParams<Row>(spec: ListSpec<Row>, query: Query): ListParams<Row> {
  const errors: Record<string, string> = {};
  const sortable = spec.columns.filter((c): c is ListParams<Row>['column'] => c.sort !== undefined);
  const fallback = sortable.find((c) => c.key === spec.defaultSort.key)!;
  let column = fallback;
  if (query.sort) {
    const asked = sortable.find((c) => c.key === query.sort);
    if (asked) column = asked;
    else errors.sort = 'This list cannot be sorted that way.';
  }
  let dir: Direction = column === fallback ? spec.defaultSort.dir : 'asc';
  if (query.dir === 'asc' || query.dir === 'desc') dir = query.dir;
  else if (query.dir) errors.dir = 'Sort up (asc) or down (desc).';
  let size = DEFAULT_PAGE_SIZE;
  if (query.size) {
    const n = Number(query.size);
    if ((PAGE_SIZES as readonly number[]).includes(n)) size = n;
    else errors.size = 'Show 25, 50, 100 or 200 rows a page.';
  }
  const side = query.after ? 'after' : query.before ? 'before' : undefined;
  let bound: Bound | undefined;
  if (side) {
    const place = decodePlace(query[side]!, column.key, dir);
    const idOk = place && (spec.id.type !== 'uuid' || UUID.test(place.id));
    if (!place || !idOk || !castable(column.sort.type, place.value))
      errors.page = 'This page link is not valid any more; start from the first page.';
    else bound = { side, ...place };
  }
  return { column, dir, size, bound, errors };
}
