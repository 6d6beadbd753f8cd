import { randomUUID } from 'node:crypto';
import type { SqlRunner } from '../storage/write-batch.js';
import type { Queryable } from '../storage/postgres.js';

/** A registered write older than this is taken to be left over from a crashed process and no longer holds readers back. */
export const INTENT_EXPIRY_MS = 2 * 60 * 1000;

/**
 * Registers a lead write before its time is read: GET /v1/leads shows only rows older than the oldest registered
 * write, so a write that commits late cannot carry an updated_at below what a client already saw. The caller
 * removes the intent in its own transaction (`clearWriteIntent`), so it disappears exactly when the write appears.
 * Returns the intent's id and the time to use for the write (never before the intent's time).
 */
export interface WriteIntent {
  id: string;
  /** The time the write uses. */
  now: Date;
  /** Set once the write's transaction has removed the intent. */
  cleared: boolean;
}

export async function registerWriteIntent(pool: Queryable, tenantId: string, sandbox: boolean, clock: () => Date): Promise<WriteIntent> {
  const id = randomUUID();
  const at = clock();
  await pool.query('INSERT INTO lead_write_intents (id, tenant_id, sandbox, at) VALUES ($1, $2, $3, $4)', [id, tenantId, sandbox, at]);
  const now = clock();
  return { id, now: now.getTime() < at.getTime() ? at : now, cleared: false };
}

/** Removes the intent; inside the write's transaction it then disappears exactly when the write appears. */
export async function clearWriteIntent(sql: SqlRunner, intent: WriteIntent): Promise<void> {
  await sql.query('DELETE FROM lead_write_intents WHERE id = $1', [intent.id]);
  intent.cleared = true;
}

/**
 * Runs a lead write after registering its intent; the write must take its time from `intent.now`. It should remove
 * the intent in its own transaction (`clearWriteIntent(tx.sql, intent)`); otherwise, and when it fails, the intent is
 * removed here afterwards, which only holds lists back a moment longer.
 */
export async function withWriteIntent<T>(pool: Queryable, tenantId: string, sandbox: boolean, clock: () => Date, write: (intent: WriteIntent) => Promise<T>): Promise<T> {
  const intent = await registerWriteIntent(pool, tenantId, sandbox, clock);
  try {
    const result = await write(intent);
    if (!intent.cleared) await clearWriteIntent(pool, intent);
    return result;
  } catch (error) {
    await clearWriteIntent(pool, intent).catch(() => undefined);
    throw error;
  }
}
