export const name = 'endpoint speed';

// What the claim knows of an endpoint's speed (src/webhooks/claims.ts, claimDueDeliveries): until when it counts
// as slow (an attempt failed or took a second or more) and until when as proven fast (attempts succeeded in under a
// second). Only a proven fast endpoint gets the large in-flight cap. Fast successes refresh fast_until only when half
// of it has passed, so they still write next to nothing to the health row the claims lock.
export const sql = `
ALTER TABLE webhook_endpoint_health ADD COLUMN slow_until timestamptz, ADD COLUMN fast_until timestamptz;
`;
