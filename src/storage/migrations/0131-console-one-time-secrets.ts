export const name = 'one-time secrets of the console, for the page shown after the POST that made them';

// A new API key, webhook secret or access token is kept here between the POST that made it and the one GET that shows
// it (src/console/one-time-secret.ts): a reload of that page shows it no more, and re-posts nothing. The value is
// sealed with a key derived from the session's id, which only the member's cookie holds (the table keeps its hash).
export const sql = `
CREATE TABLE console_one_time_secrets (
  id            uuid PRIMARY KEY,
  session_hash  bytea NOT NULL,
  sealed        text NOT NULL,
  expires_at    timestamptz NOT NULL
);
CREATE INDEX console_one_time_secrets_expiry ON console_one_time_secrets (expires_at);
`;
