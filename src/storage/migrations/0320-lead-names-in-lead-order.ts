export const name = 'the name and creation a lead list sorts by, indexed in lead_order beside the workspace';

// A list sorted by name ordered on leads (leads_by_name) while its workspace condition sat on lead_order, and the
// view joins the two by id alone (migration 221), so no index gave both: at 300,000 leads every lead was sorted for
// one page (1.39 s, 2026-11-29). The sort key moves next to the workspace and mode, kept by the same statement
// triggers; a rename is one more lead_order change, which stays HOT on leads.
export const sql = `
ALTER TABLE lead_order ADD COLUMN sort_name text NOT NULL DEFAULT '';
UPDATE lead_order o SET sort_name = lower(coalesce(l.full_name, '')) FROM leads l WHERE l.id = o.id;
CREATE INDEX leads_by_name_order ON lead_order (tenant_id, sandbox, sort_name, id);
DROP INDEX leads_by_name;
-- The list sorted by creation reads lead_rows' created_at, which is lead_order's: the same walk needs it there.
CREATE INDEX leads_by_creation_order ON lead_order (tenant_id, sandbox, created_at, id);

CREATE OR REPLACE FUNCTION lead_order_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO lead_order (id, tenant_id, sandbox, created_at, updated_at, stage_key, owner_id, converted, branch_id,
                          visa_type, source_key, country_interest, follow_up_at, sort_name)
  SELECT id, tenant_id, sandbox, created_at, updated_at, stage_key, owner_id, converted, branch_id, visa_type,
         body->'source'->>'key', country_interest, body->>'next_follow_up_at', lower(coalesce(full_name, ''))
    FROM added;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION lead_order_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE lead_order o
     SET updated_at = n.updated_at, stage_key = n.stage_key, owner_id = n.owner_id, converted = n.converted,
         branch_id = n.branch_id, visa_type = n.visa_type, source_key = n.body->'source'->>'key',
         country_interest = n.country_interest, follow_up_at = n.body->>'next_follow_up_at',
         sort_name = lower(coalesce(n.full_name, ''))
    FROM changed n
   WHERE o.id = n.id
     AND (o.updated_at, o.stage_key, o.owner_id, o.converted, o.branch_id, o.visa_type, o.source_key,
          o.country_interest, o.follow_up_at, o.sort_name)
         IS DISTINCT FROM
         (n.updated_at, n.stage_key, n.owner_id, n.converted, n.branch_id, n.visa_type, n.body->'source'->>'key',
          n.country_interest, n.body->>'next_follow_up_at', lower(coalesce(n.full_name, '')));
  RETURN NULL;
END $$;

CREATE OR REPLACE VIEW lead_rows AS
SELECT o.id, o.tenant_id, o.sandbox, o.created_at, o.updated_at, o.stage_key, o.owner_id, o.converted, o.branch_id,
       o.visa_type, o.source_key, o.country_interest, o.follow_up_at, l.revision, l.phone, l.email, l.full_name, l.body,
       o.sort_name
  FROM lead_order o
  JOIN leads l ON l.id = o.id;
`;
