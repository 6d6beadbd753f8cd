export const name = 'per-endpoint delivery sequence numbers';

// Every delivery carries its endpoint's sequence number (1, 2, 3 … in the order the fan-out assigned them) and the id
// of the event the endpoint was sent just before it, so a receiver that sees 41 after 39 knows 40 is missing. The
// counter is an operational row of its own (webhook_endpoints is a read model a rebuild recreates); only the fan-out,
// which holds its checkpoint's row lock, advances it. Resends copy their original's number and previous event.
// Existing deliveries are numbered once here, originals by creation, resends after their original's number. The
// column stays nullable only for rows made outside the service (benchmarks' and tests' fixtures): the fan-out and
// resends always set it.
export const sql = `
ALTER TABLE webhook_deliveries ADD COLUMN sequence bigint, ADD COLUMN previous_event_id uuid;

CREATE TABLE webhook_endpoint_sequences (
  endpoint_id    uuid PRIMARY KEY,
  last_sequence  bigint NOT NULL,
  last_event_id  uuid NOT NULL
);

WITH numbered AS (
  SELECT id, endpoint_id, event_id,
         row_number() OVER (PARTITION BY endpoint_id ORDER BY created_at, id) AS sequence,
         lag(event_id) OVER (PARTITION BY endpoint_id ORDER BY created_at, id) AS previous_event_id
    FROM webhook_deliveries WHERE resend_of IS NULL
)
UPDATE webhook_deliveries d SET sequence = n.sequence, previous_event_id = n.previous_event_id
  FROM numbered n WHERE d.id = n.id;

UPDATE webhook_deliveries r SET sequence = o.sequence, previous_event_id = o.previous_event_id
  FROM webhook_deliveries o WHERE r.resend_of = o.id;

INSERT INTO webhook_endpoint_sequences (endpoint_id, last_sequence, last_event_id)
SELECT DISTINCT ON (endpoint_id) endpoint_id, sequence, event_id
  FROM webhook_deliveries WHERE resend_of IS NULL AND sequence IS NOT NULL
 ORDER BY endpoint_id, sequence DESC;

CREATE INDEX webhook_deliveries_endpoint_sequence ON webhook_deliveries (endpoint_id, sequence, created_at);
`;
