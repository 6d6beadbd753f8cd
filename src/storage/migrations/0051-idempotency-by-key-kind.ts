export const name = 'Idempotency-Key answers kept apart by key kind';

// A public key is published in web pages, so anyone could take an Idempotency-Key of the workspace's secret-key
// integration first: answers are now kept per workspace, mode and key kind. An answer stored before this
// migration is copied to both kinds, so a repeat within its 24 hours still gets it.
export const sql = `
ALTER TABLE lead_idempotency ADD COLUMN key_kind text NOT NULL DEFAULT 'secret',
  DROP CONSTRAINT lead_idempotency_pkey,
  ADD PRIMARY KEY (tenant_id, sandbox, key_kind, key),
  ADD CONSTRAINT lead_idempotency_key_kind CHECK (key_kind IN ('secret', 'public'));
ALTER TABLE lead_idempotency ALTER COLUMN key_kind DROP DEFAULT;
INSERT INTO lead_idempotency (tenant_id, sandbox, key_kind, key, request_hash, status, body, created_at, expires_at)
SELECT tenant_id, sandbox, 'public', key, request_hash, status, body, created_at, expires_at FROM lead_idempotency;
`;
