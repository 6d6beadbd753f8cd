export const name =
  'lead imports: an uploaded CSV file staged row by row, its column mapping, and each row once imported';

// A CSV file is staged as it streams in (never held whole): one row per record with its cells as a JSON array, the
// line it starts on, and once the member's mapping is checked, the LeadCreate body it maps to, the API's problems with
// it and the lead its person already has. `lead_import_keys` remembers, for good, which lead each row of a file (by
// its SHA-256) made, written in the capture's transaction: the same file uploaded again creates nothing twice.
export const sql = `
CREATE TABLE lead_imports (
  id           uuid PRIMARY KEY,
  tenant_id    uuid NOT NULL,
  actor        jsonb NOT NULL,
  filename     text NOT NULL,
  uploaded     boolean NOT NULL DEFAULT false,
  file_sha256  text,
  bytes        bigint NOT NULL DEFAULT 0,
  headers      jsonb NOT NULL,
  row_count    integer NOT NULL DEFAULT 0,
  layout       text NOT NULL,
  mapping      jsonb NOT NULL,
  consent      boolean NOT NULL DEFAULT false,
  formula_rows integer NOT NULL DEFAULT 0,
  checked_at   timestamptz,
  started_at   timestamptz,
  job_id       uuid,
  created_at   timestamptz NOT NULL
);
CREATE INDEX lead_imports_of_tenant ON lead_imports (tenant_id, created_at DESC);

CREATE TABLE lead_import_rows (
  import_id    uuid NOT NULL REFERENCES lead_imports (id) ON DELETE CASCADE,
  row_no       integer NOT NULL,
  line         integer NOT NULL,
  cells        jsonb NOT NULL,
  body         jsonb,
  problems     jsonb,
  duplicate_of uuid,
  same_as_row  integer,
  PRIMARY KEY (import_id, row_no)
);

CREATE TABLE lead_import_keys (
  tenant_id    uuid NOT NULL,
  file_sha256  text NOT NULL,
  row_no       integer NOT NULL,
  lead_id      uuid NOT NULL,
  duplicate    boolean NOT NULL,
  import_id    uuid NOT NULL,
  created_at   timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, file_sha256, row_no)
);
`;
