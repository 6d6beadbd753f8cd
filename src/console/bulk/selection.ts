import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import { ConsoleRefusal, type MemberView } from '../context.js';
import { matchingIdsOf } from '../list/routes.js';
import { LEADS } from '../list/lists/leads.js';
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
export async function selectedLeads(
  services: Pick<AppServices, 'pool' | 'now'>,
  view: MemberView,
  form: SelectionForm,
): Promise<string[]> {
  if (form.scope !== 'matching') {
    const ids = [...new Set(listOf(form.ids).map((id) => id.toLowerCase()))];
    if (ids.length === 0) return [];
    const found = await services.pool.query<{ id: string }>(
      `SELECT id FROM leads WHERE tenant_id = $1 AND sandbox = false AND id = ANY($2::uuid[])
        ORDER BY updated_at DESC, id DESC`,
      [view.workspace.id, ids],
    );
    return found.rows.map((r) => r.id);
  }
  // The list's own resolver (its filter and order); one more than the bound tells a selection that is too large.
  const ids = await matchingIdsOf(services, view, LEADS, form.query ?? '', MAX_SELECTION + 1);
  if (ids.length > MAX_SELECTION)
    throw new ConsoleRefusal(
      400,
      `More than ${MAX_SELECTION.toLocaleString('en')} leads match: narrow the filters to act on fewer at once.`,
    );
  return ids;
}
