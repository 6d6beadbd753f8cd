export const name = 'API keys’ last use, and sandbox submissions by acting key';

// last_used_at is written off the request's path at most once a minute per key (src/keys/last-use.ts). A test key's
// page reads its sandbox submissions by the acting key's id (src/projections/leads-queries.ts, sandboxSubmissions):
// without an index it reads every sandbox event of the workspace. The partial index holds only the sandbox lead
// submissions, and its expression and predicate are the query's, character for character.
export const sql = `
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
CREATE INDEX events_sandbox_submissions_by_key ON events (tenant_id, (metadata->'actor'->>'key_id'), tx_id, position)
  WHERE sandbox AND type IN ('lead.created', 'lead.enquiry_received');
`;
