export const name = 'workspaces and api keys';

export const sql = `
CREATE TABLE workspaces (
  id          uuid PRIMARY KEY,
  slug        text NOT NULL UNIQUE,
  name        text NOT NULL,
  plan        text NOT NULL CHECK (plan IN ('starter', 'growth', 'enterprise')),
  status      text NOT NULL CHECK (status IN ('active', 'suspended')),
  settings    jsonb NOT NULL,
  revision    integer NOT NULL DEFAULT 1,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id               uuid PRIMARY KEY,
  tenant_id        uuid NOT NULL REFERENCES workspaces (id),
  name             text NOT NULL,
  kind             text NOT NULL CHECK (kind IN ('secret', 'public')),
  mode             text NOT NULL CHECK (mode IN ('live', 'test')),
  scopes           text[] NOT NULL,
  allowed_origins  text[] NOT NULL DEFAULT '{}',
  ip_allowlist     text[] NOT NULL DEFAULT '{}',
  hash             bytea NOT NULL UNIQUE,
  last4            text NOT NULL,
  source_key       text,
  expires_at       timestamptz,
  revoked_at       timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id);
-- CORS preflights carry no key: they look up whether any public key allows the origin.
CREATE INDEX api_keys_public_origins ON api_keys USING gin (allowed_origins) WHERE kind = 'public';

-- Monthly quota counters, spread over shards so concurrent writers in one workspace do not queue on one row.
CREATE TABLE quota_usage (
  tenant_id  uuid NOT NULL,
  period     text NOT NULL,
  metric     text NOT NULL,
  shard      smallint NOT NULL,
  used       bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, period, metric, shard)
);
`;
