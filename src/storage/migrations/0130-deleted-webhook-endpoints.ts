export const name = 'deleted webhook endpoints, kept beside their delivery log';

// A deleted endpoint's deliveries stay for the log's 30 days (src/webhooks/deliveries.ts); the console reads what the
// endpoint was from here to show them. A read model of the endpoint streams like webhook_endpoints (rebuilt from the
// log). The endpoints deleted in the last 30 days before this migration are filled in from their events.
export const sql = `
CREATE TABLE webhook_endpoints_deleted (
  id           uuid PRIMARY KEY,
  tenant_id    uuid NOT NULL,
  sandbox      boolean NOT NULL,
  url          text NOT NULL,
  description  text,
  events       text[] NOT NULL,
  created_at   timestamptz NOT NULL,
  deleted_at   timestamptz NOT NULL
);
CREATE INDEX webhook_endpoints_deleted_tenant ON webhook_endpoints_deleted (tenant_id, deleted_at);

INSERT INTO webhook_endpoints_deleted (id, tenant_id, sandbox, url, description, events, created_at, deleted_at)
SELECT (d.data->>'endpoint_id')::uuid, d.tenant_id, d.sandbox, c.data->>'url', c.data->>'description',
       ARRAY(SELECT jsonb_array_elements_text(c.data->'events')), c.created_at, d.created_at
  FROM events d JOIN events c ON c.stream_id = d.stream_id AND c.type = 'webhook_endpoint.created'
 WHERE d.type = 'webhook_endpoint.deleted' AND d.created_at > now() - interval '30 days'
ON CONFLICT (id) DO NOTHING;
`;
