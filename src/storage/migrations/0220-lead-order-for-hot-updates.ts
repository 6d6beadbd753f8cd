export const name = 'lead updates that stay HOT: the changing columns the lists order and filter by in a narrow table';

// PostgreSQL updates a row HOT (no new index entries, the old version pruned in its page) only when no indexed column
// changes, an index's expression or predicate counting its every column: every index that read `body` or
// `updated_at` made every lead update write an entry into each of the table's seventeen indexes, three of them GIN.
// Now the `leads` table keeps only indexes over what does not change after creation (id, workspace, mode, phone,
// email, created_at, and the name through the stored generated column `full_name`), so a change of stage, owner,
// follow-up or any other field is HOT when its page has room (fillfactor 80; this migration's column rewrites the
// table in it). What changes and is ordered or filtered by lives in `lead_order`, one narrow row per lead, kept by
// statement triggers from leads' own writes (every writer: projection, erasure, import, fixtures), each statement's
// rows in one set-based statement. The indexes keep their names and shapes, so the plans that read them stay as they
// were; `lead_rows` is the two joined, for queries that filter on both (docs/decisions.md, "Lead updates that are HOT").
export const sql = `
ALTER TABLE leads SET (fillfactor = 80);

DROP INDEX leads_sync;
DROP INDEX leads_by_stage;
DROP INDEX leads_by_visa_type;
DROP INDEX leads_by_source;
DROP INDEX leads_by_owner;
DROP INDEX leads_by_branch;
DROP INDEX leads_by_created;
DROP INDEX leads_unowned_by_creation;
DROP INDEX leads_board;
DROP INDEX leads_follow_up_due;
DROP INDEX leads_search_trgm;
DROP INDEX leads_by_name;
DROP INDEX leads_console_search;

ALTER TABLE leads ADD COLUMN full_name text GENERATED ALWAYS AS (body->>'full_name') STORED;

CREATE INDEX leads_search_trgm ON leads
  USING gin ((lower(coalesce(full_name, '') || ' ' || coalesce(phone, '') || ' ' || coalesce(email, ''))) gin_trgm_ops);
CREATE INDEX leads_console_search ON leads
  USING gin ((console_fold(coalesce(full_name, '') || ' ' || coalesce(email, '') || ' ' || coalesce(phone, ''))) gin_trgm_ops);
CREATE INDEX leads_by_name ON leads (tenant_id, sandbox, (lower(coalesce(full_name, ''))), id);

CREATE TABLE lead_order (
  id               uuid PRIMARY KEY,
  tenant_id        uuid NOT NULL,
  sandbox          boolean NOT NULL,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  stage_key        text,
  owner_id         uuid,
  converted        boolean NOT NULL,
  branch_id        uuid NOT NULL,
  visa_type        text,
  source_key       text,
  country_interest text,
  follow_up_at     text
);

INSERT INTO lead_order
SELECT id, tenant_id, sandbox, created_at, updated_at, stage_key, owner_id, converted, branch_id, visa_type,
       body->'source'->>'key', country_interest, body->>'next_follow_up_at'
  FROM leads;

CREATE INDEX leads_sync ON lead_order (tenant_id, sandbox, updated_at, id);
CREATE INDEX leads_by_stage ON lead_order (tenant_id, sandbox, stage_key, updated_at, id);
CREATE INDEX leads_by_visa_type ON lead_order (tenant_id, sandbox, visa_type, updated_at, id);
CREATE INDEX leads_by_source ON lead_order (tenant_id, sandbox, source_key, updated_at, id);
CREATE INDEX leads_by_owner ON lead_order (tenant_id, sandbox, owner_id, updated_at, id);
CREATE INDEX leads_by_branch ON lead_order (tenant_id, sandbox, branch_id, updated_at, id);
CREATE INDEX leads_unowned_by_creation ON lead_order (tenant_id, sandbox, created_at DESC, id)
  WHERE owner_id IS NULL AND converted = false;
CREATE INDEX leads_board ON lead_order (tenant_id, stage_key, updated_at, id)
  INCLUDE (owner_id, branch_id, visa_type, country_interest)
  WHERE sandbox = false AND converted = false;
CREATE INDEX leads_follow_up_due ON lead_order (follow_up_at, tenant_id)
  WHERE owner_id IS NOT NULL AND converted = false AND sandbox = false AND follow_up_at IS NOT NULL;

CREATE FUNCTION lead_order_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO lead_order
  SELECT id, tenant_id, sandbox, created_at, updated_at, stage_key, owner_id, converted, branch_id, visa_type,
         body->'source'->>'key', country_interest, body->>'next_follow_up_at'
    FROM added;
  RETURN NULL;
END $$;

-- A row whose ordered columns did not move (an erasure's scrub of phone and email) is not written.
CREATE FUNCTION lead_order_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE lead_order o
     SET updated_at = n.updated_at, stage_key = n.stage_key, owner_id = n.owner_id, converted = n.converted,
         branch_id = n.branch_id, visa_type = n.visa_type, source_key = n.body->'source'->>'key',
         country_interest = n.country_interest, follow_up_at = n.body->>'next_follow_up_at'
    FROM changed n
   WHERE o.id = n.id
     AND (o.updated_at, o.stage_key, o.owner_id, o.converted, o.branch_id, o.visa_type, o.source_key,
          o.country_interest, o.follow_up_at)
         IS DISTINCT FROM
         (n.updated_at, n.stage_key, n.owner_id, n.converted, n.branch_id, n.visa_type, n.body->'source'->>'key',
          n.country_interest, n.body->>'next_follow_up_at');
  RETURN NULL;
END $$;

CREATE FUNCTION lead_order_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM lead_order o USING gone g WHERE o.id = g.id;
  RETURN NULL;
END $$;

-- A DELETE, not a TRUNCATE: a TRUNCATE naming both tables (a rebuild's) has lead_order in use when this runs.
CREATE FUNCTION lead_order_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM lead_order;
  RETURN NULL;
END $$;

CREATE TRIGGER lead_order_added AFTER INSERT ON leads
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION lead_order_added();
CREATE TRIGGER lead_order_changed AFTER UPDATE ON leads
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION lead_order_changed();
CREATE TRIGGER lead_order_gone AFTER DELETE ON leads
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION lead_order_gone();
CREATE TRIGGER lead_order_truncated AFTER TRUNCATE ON leads
  FOR EACH STATEMENT EXECUTE FUNCTION lead_order_truncated();

-- The two joined: every column a lead list filters, sorts or shows. The join names the workspace, mode and creation
-- time on both sides, so a condition or an order on either side's column can be read off the other side's index.
CREATE VIEW lead_rows AS
SELECT o.id, o.tenant_id, o.sandbox, o.created_at, o.updated_at, o.stage_key, o.owner_id, o.converted, o.branch_id,
       o.visa_type, o.source_key, o.country_interest, o.follow_up_at, l.revision, l.phone, l.email, l.full_name, l.body
  FROM lead_order o
  JOIN leads l ON l.id = o.id AND l.tenant_id = o.tenant_id AND l.sandbox = o.sandbox AND l.created_at = o.created_at;
`;
