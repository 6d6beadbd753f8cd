export const name = 'endpoint delivery queues: the lease on the endpoint, each delivery written twice';

// A delivery's row was written three times (fanned out, leased by a claim, recorded), never as a HOT update, and each
// claim read the pending rows around the leased ones, so PostgreSQL's CPU per delivery grew with the backlog
// (0.420 ms at 20,000, 0.915 ms at 100,000). Now each endpoint with work has one queue row (docs/architecture.md,
// "Work queues"): when it may next have a delivery due (`due_at`, a lower bound the claims correct) and the leases of
// its deliveries in flight (`leases`: delivery id → owner and lease end, in ms since the epoch). A claim reads the
// queue rows due, then each endpoint's next deliveries through webhook_deliveries_endpoint_due; it writes the queue
// row, never the delivery, which is written when fanned out and once with each attempt's outcome.
// Two statement-level triggers keep `due_at` from what is written to webhook_deliveries (fan-out, resends, retries,
// a resumed endpoint's schedule, fixtures), so no path that queues a delivery can forget its endpoint. A claim that
// finds nothing more sets `due_at` later from what it read, after locking the row, so it never hides a delivery
// queued meanwhile (src/webhooks/claims.ts).
// Existing rows move: every endpoint with a pending delivery gets its queue row (the backlog is delivered after the
// upgrade), live leases move onto it, and the delivery columns and index of the old leases go.
export const sql = `
CREATE TABLE webhook_queues (
  endpoint_id  uuid PRIMARY KEY,
  tenant_id    uuid NOT NULL,
  due_at       timestamptz,
  leases       jsonb NOT NULL DEFAULT '{}'::jsonb
) WITH (fillfactor = 50);
ALTER TABLE webhook_queues ALTER COLUMN leases SET STORAGE MAIN;
CREATE INDEX webhook_queues_due ON webhook_queues (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX webhook_queues_tenant ON webhook_queues (tenant_id);

INSERT INTO webhook_queues (endpoint_id, tenant_id, due_at, leases)
SELECT d.endpoint_id, min(d.tenant_id::text)::uuid, min(d.next_attempt_at),
       coalesce(jsonb_object_agg(d.id::text, jsonb_build_object('o', d.lease_owner,
                  'u', (extract(epoch FROM d.lease_until) * 1000)::bigint))
                FILTER (WHERE d.lease_owner IS NOT NULL AND d.lease_until > now()), '{}'::jsonb)
  FROM webhook_deliveries d
 WHERE d.status = 'pending' AND d.next_attempt_at IS NOT NULL
 GROUP BY d.endpoint_id;

DROP INDEX IF EXISTS webhook_deliveries_endpoint_leased;
ALTER TABLE webhook_deliveries DROP COLUMN lease_owner, DROP COLUMN lease_until;

CREATE FUNCTION webhook_queues_note_queued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhook_queues AS q (endpoint_id, tenant_id, due_at)
  SELECT endpoint_id, min(tenant_id::text)::uuid, min(next_attempt_at)
    FROM queued WHERE status = 'pending' AND next_attempt_at IS NOT NULL
   GROUP BY endpoint_id ORDER BY endpoint_id
  ON CONFLICT (endpoint_id) DO UPDATE SET due_at = excluded.due_at
   WHERE q.due_at IS NULL OR q.due_at > excluded.due_at;
  RETURN NULL;
END $$;
CREATE FUNCTION webhook_queues_note_requeued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhook_queues AS q (endpoint_id, tenant_id, due_at)
  SELECT n.endpoint_id, min(n.tenant_id::text)::uuid, min(n.next_attempt_at)
    FROM queued n JOIN was o ON o.id = n.id
   WHERE n.status = 'pending' AND n.next_attempt_at IS NOT NULL
     AND (o.status <> 'pending' OR o.next_attempt_at IS DISTINCT FROM n.next_attempt_at)
   GROUP BY n.endpoint_id ORDER BY n.endpoint_id
  ON CONFLICT (endpoint_id) DO UPDATE SET due_at = excluded.due_at
   WHERE q.due_at IS NULL OR q.due_at > excluded.due_at;
  RETURN NULL;
END $$;
-- Each locks its queue rows (ON CONFLICT DO UPDATE locks the row even when its WHERE leaves it as it is), in
-- endpoint order: a claim locks them before it reads the deliveries, so it sees every delivery queued before.
CREATE TRIGGER webhook_deliveries_queued AFTER INSERT ON webhook_deliveries
  REFERENCING NEW TABLE AS queued FOR EACH STATEMENT EXECUTE FUNCTION webhook_queues_note_queued();
-- Only a change that makes a delivery due (a retry's time, a resumed endpoint's schedule) touches the queue: an
-- erasure's rewrite of a body or an outcome does not.
CREATE TRIGGER webhook_deliveries_requeued AFTER UPDATE ON webhook_deliveries
  REFERENCING OLD TABLE AS was NEW TABLE AS queued FOR EACH STATEMENT EXECUTE FUNCTION webhook_queues_note_requeued();
`;
