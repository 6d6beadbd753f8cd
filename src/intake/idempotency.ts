import { createHash } from 'node:crypto';
import type { KeyKind, KeyMode } from '../keys/api-key.js';
import type { Queryable } from '../storage/postgres.js';

/** How long a first answer is replayed for the same Idempotency-Key. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface StoredAnswer {
  requestHash: string;
  status: number;
  body: Record<string, unknown>;
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/** The fingerprint of a request body: the same JSON value gives the same hash whatever its key order or spacing. */
export function requestHash(body: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(canonical(body)))
    .digest('hex');
}

/**
 * Where an Idempotency-Key's answers are kept apart: per workspace, mode and key kind. A public key is published in
 * web pages, so anyone may send keys with it: they never meet the keys of the workspace's secret-key integrations.
 */
export interface IdempotencyScope {
  tenantId: string;
  sandbox: boolean;
  keyKind: CaptureKind;
}

/**
 * Who sends a capture: an API key of either kind, or the console's new-lead form (whose one-time form keys are kept
 * apart from any key an integration sends, migration 180).
 */
export type CaptureKind = KeyKind | 'console';

/** The scope of the keys sent with an API key of a workspace (or by its console). */
export function idempotencyScope(tenantId: string, apiKey: { kind: CaptureKind; mode: KeyMode }): IdempotencyScope {
  return { tenantId, sandbox: apiKey.mode === 'test', keyKind: apiKey.kind };
}

/** The lock a command takes so that simultaneous requests with one key run one after the other. */
export function idempotencyLock(scope: IdempotencyScope, key: string): string {
  return `lock:lead-idempotency:${scope.tenantId}:${scope.sandbox ? 'test' : 'live'}:${scope.keyKind}:${key}`;
}

/** The first answer given for this key within its window, if any. */
export async function findAnswer(
  sql: Queryable,
  scope: IdempotencyScope,
  key: string,
  now: Date,
): Promise<StoredAnswer | undefined> {
  const result = await sql.query<{ request_hash: string; status: number; body: Record<string, unknown> }>(
    `SELECT request_hash, status, body FROM lead_idempotency
      WHERE tenant_id = $1 AND sandbox = $2 AND key_kind = $3 AND key = $4 AND expires_at > $5`,
    [scope.tenantId, scope.sandbox, scope.keyKind, key, now],
  );
  const row = result.rows[0];
  return row ? { requestHash: row.request_hash, status: row.status, body: row.body } : undefined;
}

/** Records the answer; call it in the transaction that made it, holding the key's lock. An expired entry is replaced. */
export async function saveAnswer(
  sql: Queryable,
  scope: IdempotencyScope,
  key: string,
  answer: StoredAnswer,
  now: Date,
): Promise<void> {
  await sql.query(
    `INSERT INTO lead_idempotency (tenant_id, sandbox, key_kind, key, request_hash, status, body, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (tenant_id, sandbox, key_kind, key) DO UPDATE
       SET request_hash = EXCLUDED.request_hash, status = EXCLUDED.status, body = EXCLUDED.body,
           created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at`,
    [
      scope.tenantId,
      scope.sandbox,
      scope.keyKind,
      key,
      answer.requestHash,
      answer.status,
      JSON.stringify(answer.body),
      now,
      new Date(now.getTime() + IDEMPOTENCY_WINDOW_MS),
    ],
  );
}

/** Drops entries past their window. */
export async function purgeExpiredAnswers(sql: Queryable, now: Date): Promise<number> {
  return (await sql.query('DELETE FROM lead_idempotency WHERE expires_at <= $1', [now])).rowCount ?? 0;
}
