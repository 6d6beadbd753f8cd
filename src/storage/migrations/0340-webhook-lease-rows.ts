export const name = "webhook leases in rows of their own, apart from the endpoint's queue row";

// The leases of an endpoint's deliveries in flight lived in its queue row (`webhook_queues.leases`, migration 200),
// so every claim and every recording of an attempt locked and rewrote that row (about 5 KB of jsonb with 64 leases)
// and, for one endpoint, they took turns: from a 100,000 backlog four fifths of a slot's 26.6 ms was that wait
// (docs/benchmarks.md, 2026-11-29). A lease is now a row (delivery, lease end, endpoint, owner), inserted by the claim
// and deleted by the recording of its attempt, which fences on it: an attempt is recorded only while its very lease
// (delivery, end and owner) is still there. Claims still lock the queue row (its due_at); recordings lock it only for
// an endpoint with a rate (its log of attempt ends) or a retry its trigger brings forward.
export const sql = `
CREATE TABLE webhook_leases (
  delivery_id  uuid   NOT NULL,
  lease_until  bigint NOT NULL,
  endpoint_id  uuid   NOT NULL,
  owner        text   NOT NULL,
  PRIMARY KEY (delivery_id, lease_until)
);
CREATE INDEX webhook_leases_endpoint ON webhook_leases (endpoint_id, lease_until);

INSERT INTO webhook_leases (delivery_id, lease_until, endpoint_id, owner)
SELECT l.key::uuid, (l.value->>'u')::bigint, q.endpoint_id, l.value->>'o'
  FROM webhook_queues q CROSS JOIN LATERAL jsonb_each(q.leases) l;

ALTER TABLE webhook_queues DROP COLUMN leases;
`;
