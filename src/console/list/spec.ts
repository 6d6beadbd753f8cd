import type { Html } from '../html.js';
import type { MemberView } from '../context.js';
import type { Operation } from '../../identity/permissions.js';
import type { Where } from './where.js';

/** How a sort key's value is written back into SQL from a page link (`$n::<type>`). */
export type SortType = 'text' | 'timestamptz' | 'integer' | 'numeric';

/** What a list's cells and filters may know: the member in view and the workspace's time zone. */
export interface ListContext {
  view: MemberView;
  zone: string;
  /** The service's clock (overdue is before it). */
  now: Date;
}

export interface Column<Row> {
  /** The column's name in the query string (`sort=<key>`). */
  key: string;
  /** Its heading, and its header in a CSV file. */
  label: string;
  /** The expression it sorts by, never null (a `coalesce`): a fixed whitelist, so `sort=` never reaches SQL as text. */
  sort?: { sql: string; type: SortType };
  /** The cell on the page. */
  cell(row: Row, ctx: ListContext): Html | string;
  /** The cell in a CSV file, in the same words as the page (names, not codes; times in the workspace's zone). */
  text(row: Row, ctx: ListContext): string | number | null | undefined;
  /** A moment: its header in a file names the workspace's time zone. */
  zoned?: boolean;
  /** False for a column of buttons: on the page only, never in a file. */
  exported?: false;
  /** Shown only to members whose role may do this (both on the page and in a file). */
  operation?: Operation;
}

/** A bulk action the list's selection form offers (the bulk pages do it, after a confirmation naming the count). */
export interface BulkAction {
  action: 'assign' | 'move' | 'task';
  label: string;
  operation: Operation;
}

export type Query = Record<string, string | undefined>;

/** A list's filters read from its query string: the conditions they add, and refusals by field. */
export interface Filtered {
  apply(where: Where): void;
  errors: Record<string, string>;
}

/**
 * A list, declared once: where its rows come from, the columns (each sortable one by a whitelisted expression), its
 * filters. The list component (src/console/list/) gives it sorting, a count, pages, a page size, selection and CSV.
 */
export interface ListSpec<Row> {
  /** Its name in paths: /console/w/:slug/<name>. */
  name: string;
  /**
   * A record's own list (an endpoint's deliveries) lives on the record's page instead: its path below the workspace
   * (`webhooks/<id>`), and the record as the audit trail names it beside the filter (`['endpoint', id]`).
   */
  within?: { path: string; record: [string, string] };
  title: string;
  noun: { one: string; many: string };
  view: Operation;
  /** The FROM clause (fixed text), and the select list giving a Row. */
  from: string;
  select: string;
  /** The conditions every query of the list holds: the workspace is `$1`. */
  scope: readonly string[];
  /** The tie-break: a unique, never null expression; every order ends on it, so pages never skip nor repeat. */
  id: { sql: string; type: 'uuid' | 'text' };
  /** The person (lead id) a row's data belongs to: rows of an erased person never reach a file. */
  person?: string;
  columns: readonly Column<Row>[];
  defaultSort: { key: string; dir: 'asc' | 'desc' };
  /** The query string's filter names, kept by sort and page links. */
  filterNames: readonly string[];
  filter(query: Query, ctx: ListContext): Filtered;
  /** A row's id as the selection posts it, and its name for the checkbox's label. */
  rowId(row: Row): string;
  rowName(row: Row): string;
  bulk?: readonly BulkAction[];
}
