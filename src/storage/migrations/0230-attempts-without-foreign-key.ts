export const name = 'delivery attempts appended without a foreign-key check';
// Each attempt row the recording appends ran the foreign key's check, one query per row (SELECT … FOR KEY SHARE of
// its delivery), inside the statement that has just updated that very delivery by primary key: it could never fail.
// The one writer of attempts (recordingStatement) inserts only the attempts of the delivery rows its own UPDATE
// returned, and the one deleter of deliveries (purgeDeliveries) deletes their attempts in the same statement, which is
// what ON DELETE CASCADE did (docs/decisions.md, "The delivery path's cost").
export const sql = `
ALTER TABLE webhook_delivery_attempts DROP CONSTRAINT IF EXISTS webhook_delivery_attempts_delivery_id_fkey;
`;
