export const name = 'fair-webhook-claims';

// Claims look at each endpoint's own due deliveries (a capped number per endpoint) and count its leases in flight;
// a successful resend records which delivery it ended early (superseded_by), so the delivery log can say so.
export const sql = `
CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint_leased ON webhook_deliveries (endpoint_id, lease_until) WHERE status = 'pending' AND lease_until IS NOT NULL;
ALTER TABLE webhook_deliveries ADD COLUMN superseded_by uuid;
`;
