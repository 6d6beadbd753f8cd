export const name = 'API keys’ last use';

// last_used_at is written off the request's path at most once a minute per key (src/keys/last-use.ts).
export const sql = `
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
`;
