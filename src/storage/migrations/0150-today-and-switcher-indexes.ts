export const name = 'indexes for the console header and Today';

// The console's header lists the member's workspaces on every page (src/console/queries/workspaces.ts): the
// containment `settings->'users' @> '[{"email": …, "active": true}]'` reads this GIN index instead of every
// workspace's settings. Today (src/console/queries/today.ts) reads a member's open tasks soonest first and the
// workspace's unowned live leads newest first; each partial index holds only those rows, in that order, and its
// expressions and predicates are the queries', character for character.
export const sql = `
CREATE INDEX workspaces_users ON workspaces USING gin ((settings->'users') jsonb_path_ops);
CREATE INDEX tasks_open_by_assignee ON tasks (tenant_id, sandbox, (body->'assignee'->>'user_id'), due_at, id)
  WHERE body->>'status' = 'open';
CREATE INDEX leads_unowned_by_creation ON leads (tenant_id, sandbox, created_at DESC, id)
  WHERE owner_id IS NULL AND converted = false;
`;
