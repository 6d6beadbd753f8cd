export const name = 'events of a workspace by creation time';

// The Events API pages in the log's order but filters by creation time (`created[gte]`, `created[lt]`, and its 30-day
// window). Through events_tenant_order alone an oldest-first page stepped over every older event of the workspace
// first. This index finds where the window starts and ends in the log (src/webhooks/event-feed.ts), for one more
// index entry per appended event. Built in the migration's transaction (seconds per million events); a large
// deployment can build it first with CREATE INDEX CONCURRENTLY under the same name.
export const sql = `
CREATE INDEX IF NOT EXISTS events_tenant_created ON events (tenant_id, sandbox, created_at);
`;
