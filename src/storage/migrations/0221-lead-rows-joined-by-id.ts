export const name = 'lead_rows joins a lead to its order row by id alone';
// Migration 220's view joined on id, workspace, mode and creation time. The planner multiplies the selectivities of
// those four equalities as if they were independent and estimated one row for any lead list: at 300,000 leads a page
// of one visa type then sorted all 75,000 matches (2,084 ms, 2026-11-29) where a walk of lead_order's index with a
// primary-key lookup per row takes 5 ms. The id is the key of both tables, so it alone joins them.
export const sql = `
CREATE OR REPLACE VIEW lead_rows AS
SELECT o.id, o.tenant_id, o.sandbox, o.created_at, o.updated_at, o.stage_key, o.owner_id, o.converted, o.branch_id,
       o.visa_type, o.source_key, o.country_interest, o.follow_up_at, l.revision, l.phone, l.email, l.full_name, l.body
  FROM lead_order o
  JOIN leads l ON l.id = o.id;
`;
