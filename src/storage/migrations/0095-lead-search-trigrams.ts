export const name = 'trigram index for the console’s lead search';

// The console finds a lead by any part of its name, phone or email, case-insensitively: a trigram GIN index over the
// one lowercased text those three make, so `LIKE '%part%'` is answered from the index (parts of three characters or
// more; the console refuses shorter ones). pg_trgm is a trusted extension (PostgreSQL 13+): the database's owner may
// create it. The expression is the one src/console/queries/leads.ts searches with, character for character.
export const sql = `
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX leads_search_trgm ON leads
  USING gin ((lower(coalesce(body->>'full_name', '') || ' ' || coalesce(phone, '') || ' ' || coalesce(email, ''))) gin_trgm_ops);
`;
