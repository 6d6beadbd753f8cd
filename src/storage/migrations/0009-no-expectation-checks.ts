export const name = 'no expectation checks';

// Captures no longer guess "new lead" and send their writes behind vcrm_expect (migration 7): with pipelined
// statements the ordinary capture costs two round trips, and a failed check would now cost a connection.
export const sql = `
DROP FUNCTION IF EXISTS vcrm_expect(boolean, text);
`;
