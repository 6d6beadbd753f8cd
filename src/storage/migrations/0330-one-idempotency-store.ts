export const name = "one store of Idempotency-Key answers: lead capture's become api_idempotency rows";

// lead_idempotency (lead capture, per key kind) and api_idempotency (every other POST taking the header, migration
// 270) kept the same rows in two tables read by two copies of the same code. Capture is now one operation per key
// kind (`createLead:secret`, `createLead:public`, `createLead:console`), and the hourly purge drops expired answers of
// every operation, which nothing did before (an answer holds the lead it made).
export const sql = `
INSERT INTO api_idempotency (tenant_id, sandbox, operation, key, request_hash, status, body, created_at, expires_at)
SELECT tenant_id, sandbox, 'createLead:' || key_kind, key, request_hash, status, body, created_at, expires_at
  FROM lead_idempotency;
DROP TABLE lead_idempotency;
CREATE INDEX api_idempotency_expiry ON api_idempotency (expires_at);
`;
