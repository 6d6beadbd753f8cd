export const name = 'pending-deliveries index for reads of due deliveries only';

// webhook_deliveries_endpoint_due holds the pending deliveries by endpoint and due time: the claims read it for what is
// due. With the predicate `status = 'pending'` alone, any statement saying `status = 'pending'` could read it too,
// including the recording of attempts and the claim's own update, which look rows up by id: the planner may walk the
// whole index (every pending row) instead of taking the primary key. It does so when its statistics hold the index
// nearly empty: after an ANALYZE while nothing was pending, which is what a quiet service's autovacuum leaves, until
// the next one (on a large delivery log, a burst of tens of thousands does not trigger one). In that state every
// recording statement and every claim walked the whole backlog (test/webhooks/stale-statistics.test.ts). Every pending
// delivery has its next attempt time, so the rows are the same; the index now serves only statements that bound
// next_attempt_at, which are the reads of due deliveries. It ends with the id, so the claims' order (due time, then id)
// comes off the index as it is: with the id left out, the planner, trusting statistics that held the backlog small,
// sorted an endpoint's whole backlog to take its first few. Built in the migration's transaction, which holds writes to
// webhook_deliveries while it reads the table (seconds per million rows of the delivery log; the index itself holds
// only pending deliveries).
export const sql = `
DROP INDEX webhook_deliveries_endpoint_due;
CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, next_attempt_at, id)
  WHERE status = 'pending' AND next_attempt_at IS NOT NULL;
`;
