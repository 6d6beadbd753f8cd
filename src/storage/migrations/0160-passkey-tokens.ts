export const name = 'personal access tokens remember whether their session had used a passkey';

// A workspace that requires passkeys of a role accepts only tokens made in a session that used one
// (src/http/admin-auth.ts): a token made with a password alone, before the requirement or before the account held a
// passkey, stays refused. Tokens made before this migration are counted as made with a password.
export const sql = `
ALTER TABLE staff_access_tokens ADD COLUMN made_with_passkey boolean NOT NULL DEFAULT false;
`;
