export const name = 'lead bodies as json text';

// The read model's `body` is only ever written whole, read whole and handed on as text (GET /v1/leads joins the stored
// texts into its page), so it is kept as json (the text as written) instead of jsonb: PostgreSQL then sends it as it is
// instead of printing every document from its binary form (docs/benchmarks.md). Rows written before keep jsonb's
// printing of them. The change rewrites the table once, holding an exclusive lock on it while it does.
export const sql = `
ALTER TABLE leads ALTER COLUMN body TYPE json USING body::json;
`;
