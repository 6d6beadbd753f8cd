export const name = 'webhooks';

// webhook_endpoints is the read model of the endpoint streams (rebuilt from the log). Health, deliveries, attempts
// and owner notifications are operational tables written by the workers and commands, never truncated by a rebuild.
export const sql = `
CREATE TABLE webhook_endpoints (
  id                          uuid PRIMARY KEY,
  tenant_id                   uuid NOT NULL,
  sandbox                     boolean NOT NULL,
  url                         text NOT NULL,
  description                 text,
  events                      text[] NOT NULL,
  status                      text NOT NULL CHECK (status IN ('active', 'paused')),
  paused_reason               text,
  paused_at                   timestamptz,
  sealed_secret               text NOT NULL,
  previous_sealed_secret      text,
  previous_secret_valid_until timestamptz,
  created_at                  timestamptz NOT NULL,
  updated_at                  timestamptz NOT NULL,
  -- Global position of the creating event: only later events are delivered to the endpoint.
  created_tx_id               xid8 NOT NULL,
  created_position            bigint NOT NULL
);
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id, sandbox);

CREATE TABLE webhook_endpoint_health (
  endpoint_id           uuid PRIMARY KEY,
  consecutive_failures  integer NOT NULL DEFAULT 0
);

CREATE TABLE webhook_deliveries (
  id               uuid PRIMARY KEY,
  event_id         uuid NOT NULL,
  endpoint_id      uuid NOT NULL,
  tenant_id        uuid NOT NULL,
  sandbox          boolean NOT NULL,
  event_type       text NOT NULL,
  -- The exact bytes signed and sent on every attempt (the envelope).
  body             text NOT NULL,
  status           text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled')),
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz,
  lease_owner      text,
  lease_until      timestamptz,
  resend_of        uuid,
  last_response_status integer,
  last_error       text,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
-- Fan-out records one delivery per event and endpoint; manual resends are extra rows.
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (event_id, endpoint_id) WHERE resend_of IS NULL;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);

CREATE TABLE webhook_delivery_attempts (
  delivery_id       uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt           integer NOT NULL,
  attempted_at      timestamptz NOT NULL,
  request_headers   jsonb NOT NULL,
  response_status   integer,
  response_headers  jsonb,
  response_body     text,
  duration_ms       integer NOT NULL,
  error             text,
  PRIMARY KEY (delivery_id, attempt)
);

CREATE TABLE webhook_notifications (
  id           uuid PRIMARY KEY,
  tenant_id    uuid NOT NULL,
  endpoint_id  uuid NOT NULL,
  kind         text NOT NULL,
  recipient    text NOT NULL,
  subject      text NOT NULL,
  body         text NOT NULL,
  created_at   timestamptz NOT NULL,
  sent_at      timestamptz
);
CREATE INDEX webhook_notifications_tenant ON webhook_notifications (tenant_id, created_at);

INSERT INTO subscription_checkpoints (name, tx_id, position) VALUES ('webhook-fanout', '0', 0) ON CONFLICT (name) DO NOTHING;
`;
