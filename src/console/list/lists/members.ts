import type { WorkspaceUser } from '../../../workspaces/workspace.js';
import { ROLES } from '../../../identity/permissions.js';
import { textColumn } from '../cells.js';
import type { ListSpec, Query } from '../spec.js';
import { FilterSteps } from './shared.js';

/** A member as the workspace's settings hold them (one element of `settings.users`). */
export interface MemberRow {
  id: string;
  user: WorkspaceUser;
}

export const MEMBER_FILTERS = ['role'] as const;

export function memberFilter(query: Query): FilterSteps {
  const f = new FilterSteps();
  f.equals(query, 'role', `u.body->>'role'`, ROLES);
  return f;
}

/** The roles in the permission table's order (most powerful first), for sorting by role. */
const ROLE_RANK = `CASE u.body->>'role' ${ROLES.map((r, i) => `WHEN '${r}' THEN ${i}`).join(' ')} ELSE ${ROLES.length} END`;

/**
 * The members: the workspace's `settings.users` (memberships live there, docs/decisions.md), read as rows so that
 * sorting, counting and paging are the list component's like any other list's.
 */
export const MEMBERS: ListSpec<MemberRow> = {
  name: 'members',
  title: 'Members',
  noun: { one: 'member', many: 'members' },
  view: 'members.view',
  from: `workspaces w CROSS JOIN LATERAL jsonb_array_elements(w.settings->'users') AS u(body)`,
  select: `u.body->>'id' AS id, u.body AS user`,
  scope: ['w.id = $1'],
  id: { sql: `(u.body->>'id')`, type: 'text' },
  defaultSort: { key: 'name', dir: 'asc' },
  filterNames: MEMBER_FILTERS,
  filter: memberFilter,
  rowId: (r) => r.id,
  rowName: (r) => r.user.name,
  columns: [
    textColumn<MemberRow>('name', 'Name', (r) => r.user.name, `lower(coalesce(u.body->>'name', ''))`),
    textColumn<MemberRow>('email', 'Email', (r) => r.user.email, `lower(coalesce(u.body->>'email', ''))`),
    { ...textColumn<MemberRow>('role', 'Role', (r) => r.user.role), sort: { sql: ROLE_RANK, type: 'integer' } },
    textColumn<MemberRow>(
      'branch',
      'Branch',
      (r, ctx) => ctx.view.workspace.settings.branches.find((b) => b.id === r.user.branch_id)?.name,
    ),
  ],
};
