export const name = 'webhook claim indexes';

// Every delivery is written three times (fanned out, leased by a claim, recorded), and none of the writes is a HOT
// update, so each adds an entry to every index of webhook_deliveries. webhook_deliveries_due (next_attempt_at, pending
// only) served the claim before migration 0020; the claim now reads webhook_deliveries_endpoint_due (the same rows per
// endpoint), and the backlog metric counts pending rows through either. Dropping it saves one index entry per write.
export const sql = `
DROP INDEX IF EXISTS webhook_deliveries_due;
`;
