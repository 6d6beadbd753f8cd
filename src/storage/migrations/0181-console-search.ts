export const name = 'the console’s one search box: accent-free trigram indexes over leads and task titles';

// The header's search box finds a lead by any word of its name in any order, by email, or by phone however it is
// typed, and a task by a word of its title, ignoring case and accents ("Gürpreet" finds "Gurpreet"). console_fold is
// lower(unaccent(text)) declared IMMUTABLE so an index can hold it: unaccent itself is STABLE only because its rules
// file could be edited, which this service never does; both servers the tests run on (the embedded one and Debian's)
// ship the extension, and since PostgreSQL 13 it is trusted, like pg_trgm (migration 95). The search path is fixed in
// the function, so the index and a query read the same dictionary whatever the session's path. The expressions are
// the ones src/console/queries/search.ts searches with, character for character.
export const sql = `
CREATE EXTENSION IF NOT EXISTS unaccent;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE FUNCTION console_fold(text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SET search_path FROM CURRENT
  AS $$ SELECT lower(unaccent('unaccent', $1)) $$;
CREATE INDEX leads_console_search ON leads
  USING gin ((console_fold(coalesce(body->>'full_name', '') || ' ' || coalesce(email, '') || ' ' || coalesce(phone, ''))) gin_trgm_ops);
CREATE INDEX tasks_console_search ON tasks USING gin ((console_fold(coalesce(body->>'title', ''))) gin_trgm_ops);
`;
