export const name = 'personal-data-keys';

// The data keys of crypto-shredding (docs/architecture.md, "Personal data and erasure"). One random 32-byte key per
// stream that holds a person's data (a lead's stream, the streams of the applications converted from it), grouped by
// the person (the lead's id). `wrapped_key` is the key sealed with the 'person-key' purpose key derived from
// SECRET_ENCRYPTION_KEY. Erasing a person sets `wrapped_key` to NULL and `erased_at`: the row stays as the tombstone
// that refuses new personal data for the stream and tells readers the values are gone. Not a read model: never
// truncated by a rebuild.
export const sql = `
CREATE TABLE personal_data_keys (
  stream_id    text PRIMARY KEY,
  tenant_id    uuid NOT NULL,
  person_id    uuid NOT NULL,
  wrapped_key  text,
  created_at   timestamptz NOT NULL,
  erased_at    timestamptz,
  CHECK ((wrapped_key IS NULL) = (erased_at IS NOT NULL))
);
CREATE INDEX personal_data_keys_person ON personal_data_keys (tenant_id, person_id);
`;
