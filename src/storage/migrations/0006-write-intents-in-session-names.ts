export const name = 'write intents in session names';

// Lead writes in flight are now registered in their session's application_name for the length of their transaction
// (src/intake/write-intents.ts): visible to readers at once with no row written and no commit of its own, and gone
// when the transaction ends. The table that held them before is no longer read or written.
export const sql = `
DROP TABLE IF EXISTS lead_write_intents;
`;
