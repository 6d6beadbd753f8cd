export const name = 'index of due webhook.test deliveries by endpoint';

// A paused endpoint's deliveries wait for it to be resumed, except webhook.test, which is sent while it is paused (so
// a fixed receiver can be checked before resuming it: docs/decisions.md). The claim found those by reading the paused
// endpoint's whole backlog and filtering it, in every claim of every worker: one broken receiver with a large backlog
// slowed every tenant's deliveries. This index holds the test deliveries alone, so a paused endpoint costs a claim
// one short index scan (src/webhooks/claims.ts, dueDeliveriesOf; test/webhooks/stale-statistics.test.ts).
// Built in the migration's transaction, which holds writes to webhook_deliveries while it reads the table (seconds per
// million rows of the delivery log; the index itself holds only pending deliveries).
export const sql = `
CREATE INDEX webhook_deliveries_endpoint_due_tests ON webhook_deliveries (endpoint_id, next_attempt_at, id)
  WHERE status = 'pending' AND next_attempt_at IS NOT NULL AND event_type = 'webhook.test';
`;
