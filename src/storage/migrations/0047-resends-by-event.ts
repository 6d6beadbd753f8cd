export const name = 'manual resends by event and endpoint';

// A resend that succeeds ends what still waits to send the same event to the same endpoint: the original delivery,
// found by webhook_deliveries_once (event_id, endpoint_id, originals only), and any other resend of it, which no index
// found: the statement read the endpoint's whole delivery log (30 days) to find them, in the workers' recording path,
// where it held up every tenant's deliveries (test/webhooks/endpoint-log-reads.test.ts). Resends are few; this index
// holds only them, so it costs the fan-out nothing.
// Built in the migration's transaction, which holds writes to webhook_deliveries while it reads the table (seconds per
// million rows of the delivery log).
export const sql = `
CREATE INDEX webhook_deliveries_resends ON webhook_deliveries (event_id, endpoint_id) WHERE resend_of IS NOT NULL;
`;
