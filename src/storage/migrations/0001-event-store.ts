export const name = 'event store';

// Global order is (tx_id, position): a reader only reads rows whose transaction id is below the oldest
// transaction still running, so a transaction that commits later can never land behind a reader's position.
export const sql = `
CREATE TABLE events (
  position    bigint GENERATED ALWAYS AS IDENTITY,
  tx_id       xid8 NOT NULL DEFAULT pg_current_xact_id(),
  id          uuid PRIMARY KEY,
  stream_id   text NOT NULL,
  revision    integer NOT NULL,
  type        text NOT NULL,
  tenant_id   uuid NOT NULL,
  sandbox     boolean NOT NULL,
  data        jsonb NOT NULL,
  metadata    jsonb NOT NULL,
  created_at  timestamptz NOT NULL,
  CONSTRAINT events_stream_revision UNIQUE (stream_id, revision)
);
CREATE UNIQUE INDEX events_global_order ON events (tx_id, position);

CREATE TABLE subscription_checkpoints (
  name        text PRIMARY KEY,
  tx_id       xid8 NOT NULL,
  position    bigint NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);
`;
