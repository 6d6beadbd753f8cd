export const name = 'indexes for the console lists’ sorts by lead name and by creation';

// The lead list sorts by any column; by name and by creation the first page is read off these indexes in order
// (each ends on id, the tie-break every order ends on) instead of sorting every lead of the workspace. The
// expressions are the sort keys of src/console/list/lists/leads.ts, character for character. The other columns
// (phone, email, stage, owner, branch) sort the filtered rows: docs/decisions.md, "Lists: one component".
export const sql = `
CREATE INDEX leads_by_name ON leads (tenant_id, sandbox, (lower(coalesce(body->>'full_name', ''))), id);
CREATE INDEX leads_by_created_id ON leads (tenant_id, sandbox, created_at, id);
`;
