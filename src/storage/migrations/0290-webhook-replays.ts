export const name = 'webhook replays: each replay of an endpoint’s events, what it asked for and how many it queued';

// A replay queues many deliveries at once; its row is the record of who asked for which window and what it queued
// (the answer of POST /v1/webhooks/{id}/replay, the console's "retry failed", the admin interface and the CLI), and
// its id is the one the answer names. The deliveries themselves are resends of the window's originals.
export const sql = `
CREATE TABLE webhook_replays (
  id            uuid PRIMARY KEY,
  tenant_id     uuid NOT NULL,
  sandbox       boolean NOT NULL,
  endpoint_id   uuid NOT NULL,
  since         timestamptz NOT NULL,
  until         timestamptz NOT NULL,
  kinds         text[],
  only_failed   boolean NOT NULL,
  queued        integer NOT NULL,
  actor         jsonb NOT NULL,
  created_at    timestamptz NOT NULL
);
CREATE INDEX webhook_replays_endpoint ON webhook_replays (endpoint_id, created_at);
`;
