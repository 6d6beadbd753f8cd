export const name = 'indexes for the console lead list’s filters';

// The console's lead list filters by one of stage, visa type, source, owner, branch or creation date and shows the
// newest change first. Without an index per filter the planner, which has no statistics for a JSON field, scans and
// sorts the workspace's every lead (over 100 ms at 10,000 leads); with one it reads the first page off the index in
// order. Each index costs every lead write one more entry (docs/decisions.md, "Console records pages"). The
// expressions are the ones src/console/queries/leads.ts filters with, character for character.
export const sql = `
CREATE INDEX leads_by_stage ON leads (tenant_id, sandbox, (body->'stage'->>'key'), updated_at, id);
CREATE INDEX leads_by_visa_type ON leads (tenant_id, sandbox, (body->>'visa_type'), updated_at, id);
CREATE INDEX leads_by_source ON leads (tenant_id, sandbox, (body->'source'->>'key'), updated_at, id);
CREATE INDEX leads_by_owner ON leads (tenant_id, sandbox, owner_id, updated_at, id);
CREATE INDEX leads_by_branch ON leads (tenant_id, sandbox, branch_id, updated_at, id);
CREATE INDEX leads_by_created ON leads (tenant_id, sandbox, created_at);
`;
