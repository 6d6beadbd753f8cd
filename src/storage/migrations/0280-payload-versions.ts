export const name = 'payload versions: each endpoint and each delivery names the shape it is rendered in';

// An endpoint keeps the payload version it was created on until its owner changes it, and a delivery (with
// its resends) keeps the version it was rendered in, so an erasure re-renders its body in that version and the
// delivery log says which it is. Endpoints and deliveries made before versions existed were receiving the first
// shape, 2026-11-22, which the default gives them; every new row names its version (src/webhooks/versions). Adding
// a column with a constant default rewrites no row (PostgreSQL 11+).
export const sql = `
ALTER TABLE webhook_endpoints ADD COLUMN payload_version text NOT NULL DEFAULT '2026-11-22';
ALTER TABLE webhook_deliveries ADD COLUMN payload_version text NOT NULL DEFAULT '2026-11-22';
`;
