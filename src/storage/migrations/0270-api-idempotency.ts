export const name =
  'api idempotency: first answers of POSTs other than lead creation, per workspace, mode and operation';

// POST /v1/webhooks/{id}/test takes an Idempotency-Key as POST /v1/leads does (a retried ping sends no second
// webhook.test); lead_idempotency is the lead capture's own (key kinds, erasure), so other operations keep their
// first answers here, apart per operation name, for the same 24 hours. A replayed request reads its row; an expired
// row is replaced by the next use of its key, as lead_idempotency's is.
export const sql = `
CREATE TABLE api_idempotency (
  tenant_id     uuid NOT NULL,
  sandbox       boolean NOT NULL,
  operation     text NOT NULL,
  key           text NOT NULL,
  request_hash  text NOT NULL,
  status        smallint NOT NULL,
  body          jsonb NOT NULL,
  created_at    timestamptz NOT NULL,
  expires_at    timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, sandbox, operation, key)
);
`;
