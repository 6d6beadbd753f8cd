export const name = 'jobs: work the console hands off (bulk actions, CSV imports), leased and resumable';

// The shape every work queue here follows (docs/architecture.md, "Work queues"): the parent row (`jobs`) carries
// the lease and is written when claimed, renewed and finished; each item is written once when the job is made and
// once more with its outcome, in the transaction of the change it made, so a crash loses nothing and does nothing
// twice. Items are claimed by reading `job_items_todo` in `seq` order under the job's lease, not leased one by one.
export const sql = `
CREATE TABLE jobs (
  id           uuid PRIMARY KEY,
  tenant_id    uuid NOT NULL,
  sandbox      boolean NOT NULL DEFAULT false,
  kind         text NOT NULL,
  actor        jsonb NOT NULL,
  params       jsonb NOT NULL,
  state        text NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
  total        integer NOT NULL DEFAULT 0,
  lease_owner  text,
  lease_until  timestamptz,
  error        text,
  created_at   timestamptz NOT NULL,
  started_at   timestamptz,
  finished_at  timestamptz
) WITH (fillfactor = 80);
CREATE INDEX jobs_runnable ON jobs (created_at) WHERE state IN ('queued', 'running');
CREATE INDEX jobs_of_tenant ON jobs (tenant_id, created_at DESC);

CREATE TABLE job_items (
  job_id   uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  seq      integer NOT NULL,
  subject  text,
  input    jsonb,
  outcome  text CHECK (outcome IN ('done', 'refused', 'skipped')),
  reason   text,
  result   text,
  PRIMARY KEY (job_id, seq)
) WITH (fillfactor = 90);
CREATE INDEX job_items_todo ON job_items (job_id, seq) WHERE outcome IS NULL;
`;
