export const name = 'staff identity: accounts, sessions, personal access tokens, one-time tokens, passkeys';

// Memberships and roles stay in workspaces.settings.users (the definition file's users): one source of truth. These
// tables hold what proves who a staff member is. Every secret is kept only as its SHA-256 (sessions, tokens) or its
// argon2id hash (passwords).
export const sql = `
CREATE TABLE staff_accounts (
  id uuid PRIMARY KEY,
  email text NOT NULL UNIQUE CHECK (email = lower(email)),
  name text NOT NULL,
  password_hash text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE TABLE staff_sessions (
  id_hash bytea PRIMARY KEY,
  account_id uuid NOT NULL REFERENCES staff_accounts (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL,
  -- When the password or a passkey was last entered in this session (sign-in or re-authentication).
  authenticated_at timestamptz NOT NULL,
  workspace_id uuid REFERENCES workspaces (id) ON DELETE SET NULL,
  user_agent text NOT NULL DEFAULT ''
);
CREATE INDEX staff_sessions_account ON staff_sessions (account_id);

CREATE TABLE staff_access_tokens (
  id uuid PRIMARY KEY,
  token_hash bytea NOT NULL UNIQUE,
  account_id uuid NOT NULL REFERENCES staff_accounts (id) ON DELETE CASCADE,
  tenant_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  name text NOT NULL,
  role text NOT NULL,
  last_four text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz,
  last_used_at timestamptz
);
CREATE INDEX staff_access_tokens_member ON staff_access_tokens (tenant_id, account_id);

CREATE TABLE staff_one_time_tokens (
  token_hash bytea PRIMARY KEY,
  purpose text NOT NULL CHECK (purpose IN ('invitation', 'password_reset')),
  account_id uuid NOT NULL REFERENCES staff_accounts (id) ON DELETE CASCADE,
  tenant_id uuid REFERENCES workspaces (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX staff_one_time_tokens_account ON staff_one_time_tokens (account_id);

CREATE TABLE staff_passkeys (
  credential_id text PRIMARY KEY,
  account_id uuid NOT NULL REFERENCES staff_accounts (id) ON DELETE CASCADE,
  public_key bytea NOT NULL,
  counter bigint NOT NULL,
  transports text[] NOT NULL DEFAULT '{}',
  name text NOT NULL,
  created_at timestamptz NOT NULL,
  last_used_at timestamptz
);
CREATE INDEX staff_passkeys_account ON staff_passkeys (account_id);

-- A WebAuthn challenge waits here between its options and its answer, bound to a cookie (only its hash kept).
CREATE TABLE staff_challenges (
  id_hash bytea PRIMARY KEY,
  challenge text NOT NULL,
  account_id uuid REFERENCES staff_accounts (id) ON DELETE CASCADE,
  expires_at timestamptz NOT NULL
);
`;
