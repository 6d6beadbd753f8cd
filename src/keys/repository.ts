import { randomUUID } from 'node:crypto';
import type { Queryable } from '../storage/postgres.js';
import type { Scope } from '../shared/enums.js';
import { generateKey, hashKey, type KeyKind, type KeyMode } from './api-key.js';
import { announceAuthChange, announceKeyCreated, type KeyLookupCache } from './key-cache.js';
import { checkedIpAllowlist, checkedOrigins, KeyRefusal } from './restrictions.js';

export interface ApiKeyRecord {
  id: string;
  tenant_id: string;
  name: string;
  kind: KeyKind;
  mode: KeyMode;
  scopes: Scope[];
  allowed_origins: string[];
  ip_allowlist: string[];
  last4: string;
  source_key: string | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  created_at: Date;
}

export interface NewKey {
  tenantId: string;
  name: string;
  kind: KeyKind;
  mode: KeyMode;
  scopes: Scope[];
  allowedOrigins?: string[];
  ipAllowlist?: string[];
  sourceKey?: string | null;
  expiresAt?: Date | null;
}

export { KeyRefusal };

const COLUMNS =
  'id, tenant_id, name, kind, mode, scopes, allowed_origins, ip_allowlist, last4, source_key, expires_at, revoked_at, created_at';

/** Creates a key and returns its record with the full value, which is never available again. */
export async function createKey(sql: Queryable, input: NewKey): Promise<{ record: ApiKeyRecord; value: string }> {
  if (input.kind === 'public') {
    const extra = input.scopes.filter((s) => s !== 'leads:create');
    if (extra.length > 0)
      throw new KeyRefusal(`Public keys can only have the scope leads:create, not ${extra.join(', ')}`, 'scopes');
    if ((input.allowedOrigins ?? []).length === 0)
      throw new KeyRefusal('A public key needs at least one allowed origin', 'origins');
  } else if ((input.allowedOrigins ?? []).length > 0) {
    throw new KeyRefusal(
      'Allowed origins apply to public keys only; secret keys must never reach a browser',
      'origins',
    );
  }
  if (input.scopes.length === 0) throw new KeyRefusal('A key needs at least one scope', 'scopes');
  const origins = checkedOrigins(input.allowedOrigins ?? []);
  const ips = checkedIpAllowlist(input.ipAllowlist ?? []);
  const value = generateKey(input.kind, input.mode);
  const result = await sql.query<ApiKeyRecord>(
    `INSERT INTO api_keys (id, tenant_id, name, kind, mode, scopes, allowed_origins, ip_allowlist, hash, last4, source_key, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING ${COLUMNS}`,
    [
      randomUUID(),
      input.tenantId,
      input.name,
      input.kind,
      input.mode,
      [...new Set(input.scopes)],
      origins,
      ips,
      hashKey(value),
      value.slice(-4),
      input.sourceKey ?? null,
      input.expiresAt ?? null,
    ],
  );
  await announceKeyCreated(sql, keyCacheId(value));
  return { record: result.rows[0]!, value };
}

/** A key as listed to staff: with its last use, which the cached lookups leave out (it moves every minute). */
export interface ListedKey extends ApiKeyRecord {
  /** Within a minute of the last request it authenticated; null when never used. */
  last_used_at: Date | null;
}

export async function listKeys(sql: Queryable, tenantId: string): Promise<ListedKey[]> {
  return (
    await sql.query<ListedKey>(
      `SELECT ${COLUMNS}, last_used_at FROM api_keys WHERE tenant_id = $1 ORDER BY created_at`,
      [tenantId],
    )
  ).rows;
}

export async function revokeKey(sql: Queryable, tenantId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
  const result = await sql.query<ApiKeyRecord>(
    `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [tenantId, keyId],
  );
  await announceAuthChange(sql);
  return result.rows[0];
}

export interface KeyLookup extends ApiKeyRecord {
  workspace_revision: number;
  workspace_status: 'active' | 'suspended';
}

/** The id of a key value in the lookup cache: base64 of its SHA-256. */
export function keyCacheId(value: string): string {
  return hashKey(value).toString('base64');
}

/**
 * The key with this exact value, with its workspace's revision and status, or undefined; through the cache when
 * given. Callers that must not reach the database for a value naming no key ask the cache's `exists` first.
 */
export async function findKeyByValue(
  sql: Queryable,
  value: string,
  cache?: KeyLookupCache,
): Promise<KeyLookup | undefined> {
  const hash = hashKey(value);
  const cacheKey = hash.toString('base64');
  const cached = cache?.get(cacheKey);
  if (cached) return cached;
  const result = await sql.query<KeyLookup>(
    `SELECT ${COLUMNS.split(', ')
      .map((c) => `k.${c}`)
      .join(', ')}, w.revision AS workspace_revision, w.status AS workspace_status
       FROM api_keys k JOIN workspaces w ON w.id = k.tenant_id WHERE k.hash = $1`,
    [hash],
  );
  const found = result.rows[0];
  if (found) cache?.set(cacheKey, found);
  return found;
}

/**
 * Whether some public key that is neither revoked nor expired allows this origin (in either mode, in any workspace):
 * all a CORS preflight, which carries no key, can ask. Through the cache when given.
 */
export async function originAllowance(
  sql: Queryable,
  origin: string,
  now: Date,
  cache?: KeyLookupCache,
): Promise<boolean> {
  const cached = cache?.originAllowed(origin, now.getTime());
  if (cached !== undefined) return cached;
  const version = cache?.version ?? 0;
  const result = await sql.query<{ allowed: boolean; forever: boolean | null; until: Date | null }>(
    `SELECT count(*) > 0 AS allowed, bool_or(expires_at IS NULL) AS forever, max(expires_at) AS until
       FROM api_keys
      WHERE kind = 'public' AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)
        AND 'leads:create' = ANY (scopes) AND allowed_origins @> ARRAY[$1::text]`,
    [origin, now],
  );
  const row = result.rows[0];
  const allowed = row?.allowed ?? false;
  const allowedUntil = allowed && !row?.forever && row?.until ? row.until.getTime() : null;
  cache?.setOriginAllowed(origin, { allowed, allowedUntil }, version);
  return allowed;
}
