export const name = 'room for HOT updates of cases and invoices';
// A case's progress (state, status, updated_at) and an invoice's payments (body, updated_at) change no indexed column,
// so their updates can be HOT (no new index entries) when the row's page has room for the new version: fillfactor
// leaves that room in pages written from now on. Leads cannot be HOT: every change moves updated_at, which the sync
// index orders by (docs/architecture.md, "Read models are folds, written once per change").
export const sql = `
ALTER TABLE applications SET (fillfactor = 80);
ALTER TABLE invoices SET (fillfactor = 80);
`;
