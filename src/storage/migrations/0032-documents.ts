export const name = 'documents';

// The read model of the document streams, written inside the appending transaction and rebuilt from the log. The
// partial index is the scan queue: documents received while the scanner was unreachable, oldest first.
export const sql = `
CREATE TABLE documents (
  id              uuid PRIMARY KEY,
  tenant_id       uuid NOT NULL,
  sandbox         boolean NOT NULL,
  lead_id         uuid,
  application_id  uuid,
  status          text NOT NULL,
  body            jsonb NOT NULL,
  revision        integer NOT NULL,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL
);
CREATE INDEX documents_lead ON documents (tenant_id, sandbox, lead_id, created_at) WHERE lead_id IS NOT NULL;
CREATE INDEX documents_application ON documents (tenant_id, sandbox, application_id, created_at)
  WHERE application_id IS NOT NULL;
CREATE INDEX documents_pending_scan ON documents (created_at, id) WHERE status = 'pending_scan';
`;
