export const name = 'events in global order per workspace';

// Export, import's checks and `audit verify <workspace>` read one workspace's events in the global order
// (src/events/workspace-log.ts, verify-chain.ts). Through events_global_order alone they stepped over every other
// workspace's events too: exporting a small workspace of a large database read the whole log. This index gives each
// workspace its own range, for one more index entry per appended event (its cost: docs/benchmarks.md). Built in the
// migration's transaction, which holds writes to events while it runs (seconds per million events); a large deployment
// can build it first with CREATE INDEX CONCURRENTLY under the same name.
export const sql = `
CREATE INDEX IF NOT EXISTS events_tenant_order ON events (tenant_id, tx_id, position);
`;
