export const name = 'applications';

// `applications` is a read model (rebuilt from the log). `application_numbers` is not: it hands out case numbers
// inside the converting transaction, one row per workspace and mode, so numbers have no gaps or repeats.
export const sql = `
CREATE TABLE applications (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL,
  sandbox     boolean NOT NULL,
  lead_id     uuid NOT NULL,
  number      integer NOT NULL,
  case_ref    text NOT NULL,
  state       jsonb NOT NULL,
  status      jsonb NOT NULL,
  revision    integer NOT NULL,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL
);
CREATE UNIQUE INDEX applications_number ON applications (tenant_id, sandbox, number);
CREATE INDEX applications_lead ON applications (tenant_id, sandbox, lead_id);

CREATE TABLE application_numbers (
  tenant_id    uuid NOT NULL,
  sandbox      boolean NOT NULL,
  last_number  integer NOT NULL,
  PRIMARY KEY (tenant_id, sandbox)
);
`;
