export const name = 'an index of the key rows still in a derived format';

// Key rows in the derived formats (`s1:` seeds, `s2:` nonces) are rewritten into the wrapped one by the service at
// start-up, which has SECRET_ENCRYPTION_KEY (src/events/person-key-rows.ts). This partial index lets it find them
// without reading the table; once they are rewritten it is empty.
export const sql = `
CREATE INDEX personal_data_keys_derived ON personal_data_keys (stream_id) WHERE wrapped_key LIKE 's%';
`;
