export const name = 'events kept inline up to 4 KB';

// An event row longer than toast_tuple_target (2 KB by default) has its data compressed and, when that does not bring
// it under, moved out of line into the TOAST table: a second heap row and an index entry, and a fetch on every read. A
// lead's events with personal values sealed (base64 ciphertext beside the clear fields) are 2.0 to 2.5 KB and do not
// compress, so every new lead paid for both. Rows up to 4 KB now stay in the heap as written; larger ones are
// compressed and moved as before. It changes how rows are stored, not what they hold.
export const sql = `
ALTER TABLE events SET (toast_tuple_target = 4080);
`;
