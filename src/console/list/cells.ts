import { dateText, wallTimeOf, when } from '../time.js';
import type { Html } from '../html.js';
import type { ListContext } from './spec.js';

const pad = (n: number) => String(n).padStart(2, '0');

/** A moment as a spreadsheet reads it, in the workspace's zone: `2026-11-29 14:05` (the zone is in the header). */
export function csvTime(iso: string | Date | null | undefined, zone: string): string {
  if (!iso) return '';
  const w = wallTimeOf(new Date(iso), zone);
  return `${dateText(w)} ${pad(w.hour)}:${pad(w.minute)}`;
}

/** A time column: `when` on the page (with its zone), `csvTime` in a file. */
export function timeColumn<Row>(key: string, label: string, sql: string, of: (row: Row) => string | Date | null) {
  return {
    key,
    label,
    zoned: true,
    sort: { sql, type: 'timestamptz' as const },
    cell: (row: Row, ctx: ListContext): Html | string => (of(row) ? when(of(row), ctx.zone) : '—'),
    text: (row: Row, ctx: ListContext) => csvTime(of(row), ctx.zone),
  };
}

/** A text column: the same words on the page and in a file, a dash on the page when empty. */
export function textColumn<Row>(
  key: string,
  label: string,
  of: (row: Row, ctx: ListContext) => string | null | undefined,
  sql?: string,
) {
  return {
    key,
    label,
    ...(sql ? { sort: { sql, type: 'text' as const } } : {}),
    cell: (row: Row, ctx: ListContext) => of(row, ctx) || '—',
    text: (row: Row, ctx: ListContext) => of(row, ctx) ?? '',
  };
}
