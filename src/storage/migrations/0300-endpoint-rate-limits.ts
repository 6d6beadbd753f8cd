export const name = 'endpoint rate limits: the most deliveries a second an endpoint accepts, kept by the claim';

// An endpoint may set the most deliveries a second it accepts (null: no limit). The claim keeps to it across every
// worker (src/webhooks/claims.ts): a delivery counts from its claim (its lease on the queue row) until a second after
// its attempt ended, which the recording notes in the queue row's `rate_log` (end in ms, rounded up to 10 ms → how
// many ended then) when the row's `rate_limit` (the endpoint's rate as its last claim read it) says it has one; an
// unlimited endpoint's log stays empty. `throttled_until` is when the rate lets its next delivery go while it holds
// one back; the delivery log shows it on the deliveries that wait (docs/decisions.md, "A per-endpoint rate").
export const sql = `
ALTER TABLE webhook_endpoints ADD COLUMN rate_limit_per_second integer
  CHECK (rate_limit_per_second BETWEEN 1 AND 1000);
ALTER TABLE webhook_queues ADD COLUMN rate_limit integer, ADD COLUMN rate_log jsonb NOT NULL DEFAULT '{}'::jsonb,
  ADD COLUMN throttled_until timestamptz;
`;
