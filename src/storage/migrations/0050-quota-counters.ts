export const name = 'one quota counter row per workspace, month and metric';

// The 64 shard rows per workspace and month let concurrent captures all pass a check of the committed sum
// (forty at once passed a quota of 3). One row, incremented under its row lock by a statement whose CHECK refuses a
// count past the limit the capture passes (`allowed`; NULL: unlimited), makes the check and the count one atomic step.
// The shards' sums carry over with no limit: the next capture sets it.
export const sql = `
CREATE TABLE quota_counters (
  tenant_id  uuid NOT NULL,
  period     text NOT NULL,
  metric     text NOT NULL,
  used       bigint NOT NULL,
  allowed    bigint,
  PRIMARY KEY (tenant_id, period, metric),
  CONSTRAINT quota_counters_within_allowed CHECK (used <= allowed)
);
INSERT INTO quota_counters (tenant_id, period, metric, used)
SELECT tenant_id, period, metric, sum(used) FROM quota_usage GROUP BY tenant_id, period, metric;
DROP TABLE quota_usage;
`;
