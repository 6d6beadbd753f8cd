import { IDEMPOTENCY_WINDOW_MS, type StoredAnswer } from '../intake/idempotency.js';
import type { Queryable } from '../storage/postgres.js';

export { requestHash, type StoredAnswer } from '../intake/idempotency.js';

/**
 * Where the answers of an API operation other than lead capture are kept per Idempotency-Key (api_idempotency,
 * migration 270): per workspace, mode and operation, for the 24 hours POST /v1/leads keeps its own.
 */
export interface OperationScope {
  tenantId: string;
  sandbox: boolean;
  /** The API operation, for example `sendWebhookEndpointTest`. */
  operation: string;
}

/** The lock-only stream a command names so that two requests with one key run one after the other. */
export function operationKeyLock(scope: OperationScope, key: string): string {
  return `lock:api-idempotency:${scope.tenantId}:${scope.sandbox ? 'test' : 'live'}:${scope.operation}:${key}`;
}

/** The first answer given for this key within its window, if any. */
export async function findOperationAnswer(
  sql: Queryable,
  scope: OperationScope,
  key: string,
  now: Date,
): Promise<StoredAnswer | undefined> {
  const result = await sql.query<{ request_hash: string; status: number; body: Record<string, unknown> }>(
    `SELECT request_hash, status, body FROM api_idempotency
      WHERE tenant_id = $1 AND sandbox = $2 AND operation = $3 AND key = $4 AND expires_at > $5`,
    [scope.tenantId, scope.sandbox, scope.operation, key, now],
  );
  const row = result.rows[0];
  return row ? { requestHash: row.request_hash, status: row.status, body: row.body } : undefined;
}

/** Records the answer in the transaction that made it, holding the key's lock; an expired entry is replaced. */
export async function saveOperationAnswer(
  sql: Queryable,
  scope: OperationScope,
  key: string,
  answer: StoredAnswer,
  now: Date,
): Promise<void> {
  await sql.query(
    `INSERT INTO api_idempotency (tenant_id, sandbox, operation, key, request_hash, status, body, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (tenant_id, sandbox, operation, key) DO UPDATE
       SET request_hash = EXCLUDED.request_hash, status = EXCLUDED.status, body = EXCLUDED.body,
           created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at`,
    [
      scope.tenantId,
      scope.sandbox,
      scope.operation,
      key,
      answer.requestHash,
      answer.status,
      JSON.stringify(answer.body),
      now,
      new Date(now.getTime() + IDEMPOTENCY_WINDOW_MS),
    ],
  );
}
