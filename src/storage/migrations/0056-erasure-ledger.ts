export const name = 'erasure ledger';

// Who was erased in which workspace, and when: nothing personal (docs/decisions.md, "A restore does not bring an
// erased person back"). Written by erasure in its transaction, carried by exports in their trailer and applied by
// imports, so a restore of an export older than an erasure keeps the person erased. Erasures made before the ledger
// are read back from the data keys' tombstones.
export const sql = `
CREATE TABLE erasure_ledger (
  tenant_id  uuid NOT NULL,
  person_id  uuid NOT NULL,
  erased_at  timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, person_id)
);
INSERT INTO erasure_ledger (tenant_id, person_id, erased_at)
SELECT tenant_id, person_id, min(erased_at) FROM personal_data_keys
 WHERE erased_at IS NOT NULL GROUP BY tenant_id, person_id;
`;
