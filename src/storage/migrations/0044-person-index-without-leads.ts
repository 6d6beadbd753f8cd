export const name = 'person index without lead streams';

// personal_data_keys_person finds a person's key rows when they are erased. A lead stream's person is the lead itself
// (its stream id is 'lead-' and the person's id), so its row is found by the primary key and needs no entry here; the
// streams filed under the lead (applications, documents, tasks, invoices) still do. Every lead capture writes one key
// row: one index entry fewer each, a B-tree insert at a random place. The statements that look a person's rows up say
// both ways (PERSON_KEY_ROWS in src/commands/leads/erase-copies.ts).
export const sql = `
DROP INDEX personal_data_keys_person;
CREATE INDEX personal_data_keys_person ON personal_data_keys (tenant_id, person_id) WHERE stream_id NOT LIKE 'lead-%';
`;
