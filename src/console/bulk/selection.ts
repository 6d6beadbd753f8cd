import { Type } from 'typebox';
import { listConsoleLeads } from '../queries/leads.js';
import { filterOf } from '../pages/leads.js';
import type { Queryable } from '../../storage/postgres.js';
import { ConsoleRefusal, type MemberView } from '../context.js';
import { timeZoneOf } from '../time.js';
import { Choice, Many, Uuid, listOf } from '../schemas.js';
import { Text } from '../pages/record-schemas.js';

/** At most this many rows in one bulk action (a larger selection is refused: narrow the filters). */
export const MAX_SELECTION = 10_000;
/** Rows a page may send by id (the rest of a larger selection goes as `matching`). */
export const MAX_IDS = 500;

/**
 * A list's selection as its bulk form sends it (docs: contracts between the lists and the bulk actions): the checked
 * rows' ids, or every row matching the list's filters (`scope=matching` with the list's query string).
 */
export const SelectionFields = {
  ids: Many(Uuid, MAX_IDS),
  scope: Type.Optional(Choice(['ids', 'matching'] as const)),
  query: Type.Optional(Text(4000)),
};

export interface SelectionForm {
  ids?: string | string[];
  scope?: 'ids' | 'matching';
  query?: string;
}

/** The fields that carry a selection on to the next form (the confirmation's hidden inputs). */
export function selectionFields(form: SelectionForm): [string, string][] {
  if (form.scope === 'matching')
    return [
      ['scope', 'matching'],
      ['query', form.query ?? ''],
    ];
  return [['scope', 'ids'], ...listOf(form.ids).map((id): [string, string] => ['ids', id.toLowerCase()])];
}

/**
 * The leads a selection names, in the workspace in view only: checked ids that name no live lead of it are dropped;
 * `matching` runs the list's own filter (its query string) over every page. In the list's order.
 */
export async function selectedLeads(sql: Queryable, view: MemberView, form: SelectionForm): Promise<string[]> {
  if (form.scope !== 'matching') {
    const ids = [...new Set(listOf(form.ids).map((id) => id.toLowerCase()))];
    if (ids.length === 0) return [];
    const found = await sql.query<{ id: string }>(
      `SELECT id FROM leads WHERE tenant_id = $1 AND sandbox = false AND id = ANY($2::uuid[])
        ORDER BY updated_at DESC, id DESC`,
      [view.workspace.id, ids],
    );
    return found.rows.map((r) => r.id);
  }
  const query = Object.fromEntries(new URLSearchParams(form.query ?? '')) as Record<string, string>;
  const { filter, errors } = filterOf(query, timeZoneOf(view.workspace));
  if (Object.keys(errors).length > 0)
    throw new ConsoleRefusal(400, 'The list’s filters are not valid any more: go back to the list and correct them.');
  const ids: string[] = [];
  let after: Parameters<typeof listConsoleLeads>[3]['after'];
  for (;;) {
    const page = await listConsoleLeads(sql, view.workspace.id, filter, { after, limit: 1000 });
    ids.push(...page.leads.map((l) => l.id));
    if (ids.length > MAX_SELECTION)
      throw new ConsoleRefusal(
        400,
        `More than ${MAX_SELECTION.toLocaleString('en')} leads match: narrow the filters to act on fewer at once.`,
      );
    if (!page.next) return ids;
    after = page.next;
  }
}
