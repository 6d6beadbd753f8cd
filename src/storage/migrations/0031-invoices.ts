export const name = 'invoices';

// `invoices` is a read model (rebuilt from the log): each invoice with its payments and refunds, as the public Invoice.
// `invoice_numbers` is not: it hands out invoice numbers inside the issuing transaction, one row per workspace and
// mode, so numbers have no gaps or repeats (a rolled-back issue gives its number back).
export const sql = `
CREATE TABLE invoices (
  id              uuid PRIMARY KEY,
  tenant_id       uuid NOT NULL,
  sandbox         boolean NOT NULL,
  number          text NOT NULL,
  lead_id         uuid,
  application_id  uuid,
  body            jsonb NOT NULL,
  revision        integer NOT NULL,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL
);
CREATE UNIQUE INDEX invoices_number ON invoices (tenant_id, sandbox, number);
CREATE INDEX invoices_lead ON invoices (tenant_id, sandbox, lead_id) WHERE lead_id IS NOT NULL;
CREATE INDEX invoices_application ON invoices (tenant_id, sandbox, application_id) WHERE application_id IS NOT NULL;

CREATE TABLE invoice_numbers (
  tenant_id    uuid NOT NULL,
  sandbox      boolean NOT NULL,
  last_number  integer NOT NULL,
  PRIMARY KEY (tenant_id, sandbox)
);
`;
