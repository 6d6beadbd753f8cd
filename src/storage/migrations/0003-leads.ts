export const name = 'leads';

// `leads` is the read model of lead streams: the public Lead shape in `body`, with the columns queries filter on.
// Phone and email are unique per workspace and mode: capture locks both before looking for a duplicate, and the
// indexes make a second lead for the same person impossible even if that rule were broken.
export const sql = `
CREATE TABLE leads (
  id           uuid PRIMARY KEY,
  tenant_id    uuid NOT NULL,
  sandbox      boolean NOT NULL,
  revision     integer NOT NULL,
  phone        text,
  email        text,
  branch_id    uuid NOT NULL,
  owner_id     uuid,
  converted    boolean NOT NULL DEFAULT false,
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL,
  body         jsonb NOT NULL
);
CREATE INDEX leads_sync ON leads (tenant_id, sandbox, updated_at, id);
CREATE UNIQUE INDEX leads_phone ON leads (tenant_id, sandbox, phone) WHERE phone IS NOT NULL;
CREATE UNIQUE INDEX leads_email ON leads (tenant_id, sandbox, email) WHERE email IS NOT NULL;

-- First answers of POST /v1/leads per Idempotency-Key, per workspace and mode, kept 24 hours.
CREATE TABLE lead_idempotency (
  tenant_id     uuid NOT NULL,
  sandbox       boolean NOT NULL,
  key           text NOT NULL,
  request_hash  text NOT NULL,
  status        smallint NOT NULL,
  body          jsonb NOT NULL,
  created_at    timestamptz NOT NULL,
  expires_at    timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, sandbox, key)
);
CREATE INDEX lead_idempotency_expiry ON lead_idempotency (expires_at);

-- Lead writes in flight: registered (and committed) before a writer reads the clock, removed by the writer's own
-- transaction. GET /v1/leads shows only rows older than the oldest registered write, so no later commit can carry
-- an updated_at below what a client already saw. Unlogged: losing it in a crash only loses in-flight markers.
CREATE UNLOGGED TABLE lead_write_intents (
  id         uuid PRIMARY KEY,
  tenant_id  uuid NOT NULL,
  sandbox    boolean NOT NULL,
  at         timestamptz NOT NULL
);
CREATE INDEX lead_write_intents_tenant ON lead_write_intents (tenant_id, sandbox, at);
`;
