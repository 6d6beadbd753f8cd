export const name = 'staff passwords: known sign-in addresses, one live reset link, the reset outbox';

// staff_known_addresses: where each account signed in before (src/identity/sign-in.ts), so failed passwords from a
// stranger's address never lock the owner out of their own (docs/decisions.md, "Staff identity"). A session keeps
// the address it signed in from: re-entering the password inside it counts against that door.
//
// A password change by any path (reset, change, invitation, CLI) ends every outstanding reset link: a trigger, so no
// path can forget it. At most one reset link per account is live (unused) at a time; the unique index backs the
// code that ends the older one before issuing a new one.
//
// staff_reset_requests: the outbox of "forgot my password" (src/identity/password-resets.ts). The form only writes a
// row, whatever the email, and a worker looks the email up and mails the link; a row is deleted once handled.
export const sql = `
CREATE TABLE staff_known_addresses (
  account_id uuid NOT NULL REFERENCES staff_accounts (id) ON DELETE CASCADE,
  address text NOT NULL,
  last_signed_in_at timestamptz NOT NULL,
  PRIMARY KEY (account_id, address)
);

ALTER TABLE staff_sessions ADD COLUMN address text NOT NULL DEFAULT '';

DELETE FROM staff_one_time_tokens t
 WHERE t.purpose = 'password_reset' AND t.used_at IS NULL
   AND EXISTS (SELECT 1 FROM staff_one_time_tokens n
                WHERE n.account_id = t.account_id AND n.purpose = 'password_reset' AND n.used_at IS NULL
                  AND (n.created_at, n.token_hash) > (t.created_at, t.token_hash));
CREATE UNIQUE INDEX staff_one_time_tokens_one_live_reset ON staff_one_time_tokens (account_id)
  WHERE purpose = 'password_reset' AND used_at IS NULL;

CREATE FUNCTION staff_end_reset_links() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM staff_one_time_tokens WHERE account_id = NEW.id AND purpose = 'password_reset' AND used_at IS NULL;
  RETURN NEW;
END $$;
CREATE TRIGGER staff_accounts_password_changed AFTER UPDATE OF password_hash ON staff_accounts
  FOR EACH ROW WHEN (OLD.password_hash IS DISTINCT FROM NEW.password_hash) EXECUTE FUNCTION staff_end_reset_links();

CREATE TABLE staff_reset_requests (
  id uuid PRIMARY KEY,
  email text NOT NULL,
  requested_at timestamptz NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  claim_id uuid,
  lease_until timestamptz
);
CREATE INDEX staff_reset_requests_due ON staff_reset_requests (next_attempt_at);
`;
