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

/** An array index as JavaScript orders an object's keys: such keys come first, in numeric order. */
const ARRAY_INDEX = /^(?:0|[1-9]\d{0,9})$/;
const isArrayIndex = (key: string) => ARRAY_INDEX.test(key) && Number(key) < 2 ** 32 - 1;

/** An object's keys in the order its canonical form lists them: array indices numerically, then the rest sorted. */
function canonicalKeys(object: object): string[] {
  const keys = Object.keys(object).sort();
  const indices = keys.filter(isArrayIndex).sort((a, b) => Number(a) - Number(b));
  return indices.length === 0 ? keys : [...indices, ...keys.filter((k) => !isArrayIndex(k))];
}

/**
 * A parsed JSON value's text with every object's keys in canonical order (what `JSON.stringify` writes for the same
 * value rebuilt with sorted keys, so fingerprints stored before 2026-11-30 still match). Iterative: a body nested
 * thousands deep (JSON.parse takes it) must not exhaust the stack, which the recursive form did (a 500 the fuzz suite
 * found).
 */
function canonicalText(root: unknown): string {
  let text = '';
  // Work items: a value to write, or a piece of punctuation to write once the values before it are written.
  const stack: ({ value: unknown; inArray: boolean } | string)[] = [{ value: root, inArray: false }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if (typeof item === 'string') {
      text += item;
      continue;
    }
    const { value, inArray } = item;
    if (Array.isArray(value)) {
      stack.push(']');
      for (let i = value.length - 1; i >= 0; i--) {
        stack.push({ value: value[i], inArray: true });
        if (i > 0) stack.push(',');
      }
      text += '[';
    } else if (value !== null && typeof value === 'object') {
      // Members JSON leaves out (undefined, functions) are left out here too, commas with them.
      const keys = canonicalKeys(value).filter((k) => writable((value as Record<string, unknown>)[k]));
      stack.push('}');
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push({ value: (value as Record<string, unknown>)[keys[i]!], inArray: false });
        stack.push(`${i > 0 ? ',' : ''}${JSON.stringify(keys[i])}:`);
      }
      text += '{';
    } else {
      text += writable(value) ? JSON.stringify(value) : inArray ? 'null' : '';
    }
  }
  return text;
}

const writable = (value: unknown) => value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';

/** The fingerprint of a request body: the same JSON value gives the same hash whatever its key order or spacing. */
export function requestHash(body: unknown): string {
  return createHash('sha256').update(canonicalText(body)).digest('hex');
}

/**
 * Where an Idempotency-Key's answers are kept apart: per workspace, mode and operation (api_idempotency, migration
 * 330: one store for every POST that takes the header). Lead capture is one operation per key kind: a public key is
 * published in web pages, so anyone may send keys with it, and they never meet the keys of the workspace's
 * secret-key integrations or of its console's new-lead form.
 */
export interface IdempotencyScope {
  tenantId: string;
  sandbox: boolean;
  /** The API operation (its operationId), for lead capture with the key kind: `createLead:public`. */
  operation: string;
}

/**
 * Who sends a capture: an API key of either kind, or the console's new-lead form (whose one-time form keys are kept
 * apart from any key an integration sends, migration 180).
 */
export type CaptureKind = KeyKind | 'console';

/** The scope of the capture keys sent with an API key of a workspace (or by its console). */
export function idempotencyScope(tenantId: string, apiKey: { kind: CaptureKind; mode: KeyMode }): IdempotencyScope {
  return { tenantId, sandbox: apiKey.mode === 'test', operation: `createLead:${apiKey.kind}` };
}

/** The lock a command takes so that simultaneous requests with one key run one after the other. */
export function idempotencyLock(scope: IdempotencyScope, key: string): string {
  return `lock:idempotency:${scope.tenantId}:${scope.sandbox ? 'test' : 'live'}:${scope.operation}:${key}`;
}

/** The first answer given for this key within its window, if any. */
export async function findAnswer(
  sql: Queryable,
  scope: IdempotencyScope,
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

/** Records the answer; call it in the transaction that made it, holding the key's lock. An expired entry is replaced. */
export async function saveAnswer(
  sql: Queryable,
  scope: IdempotencyScope,
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

/** Drops entries past their window, every operation's: a first answer may hold the person a lead was made for. */
export async function purgeExpiredAnswers(sql: Queryable, now: Date): Promise<number> {
  return (await sql.query('DELETE FROM api_idempotency WHERE expires_at <= $1', [now])).rowCount ?? 0;
}
