export const name = 'sessions that a passkey opened or confirmed';

// A workspace may require passkeys of some roles (settings.passkeys_required): a member in such a role reaches it
// only from a session in which one of their passkeys was used (sign-in, confirmation or registration), not from a
// session a password alone opened. The time says when; NULL: a password session.
export const sql = `
ALTER TABLE staff_sessions ADD COLUMN passkey_at timestamptz;
`;
