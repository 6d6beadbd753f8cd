import type { Queryable } from '../storage/postgres.js';

const MINUTE_MS = 60_000;

/** Where a failed write is reported: the request's logger (never given the key's value). */
export interface LastUseLog {
  warn(details: Record<string, unknown>, message: string): void;
}

/**
 * Records when keys are used, off the request's path: at most one write per key per minute from this process, and
 * the statement itself writes only when the stored value is over a minute old (other processes write too).
 */
export class LastUseRecorder {
  /** When this process last wrote each key's last use, in ms. */
  private readonly written = new Map<string, number>();

  /** Starts the write when one is due and returns at once; the write's error is logged, never thrown. */
  record(sql: Queryable, keyId: string, at: Date, log: LastUseLog): void {
    const now = at.getTime();
    const last = this.written.get(keyId);
    if (last !== undefined && now - last < MINUTE_MS) return;
    this.forgetOlderThan(now - MINUTE_MS);
    this.written.set(keyId, now);
    writeLastUse(sql, keyId, at).catch((error: unknown) => {
      // The name and SQLSTATE only: a driver's message may quote the statement's values.
      const code = (error as { code?: unknown } | null)?.code;
      log.warn(
        {
          key_id: keyId,
          error: error instanceof Error ? error.name : 'unknown',
          code: typeof code === 'string' ? code : null,
        },
        "could not record an API key's last use",
      );
    });
  }

  // Entries over a minute old decide nothing: dropped so the map holds at most the keys used in the last minute.
  private forgetOlderThan(cutoff: number): void {
    if (this.written.size < 1024) return;
    for (const [id, at] of this.written) if (at < cutoff) this.written.delete(id);
  }
}

/** Sets the key's last use unless the stored one is within a minute of it; whether a row was written. */
export async function writeLastUse(sql: Queryable, keyId: string, at: Date): Promise<boolean> {
  const result = await sql.query(
    `UPDATE api_keys SET last_used_at = $2
      WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2::timestamptz - interval '1 minute')`,
    [keyId, at],
  );
  return (result.rowCount ?? 0) > 0;
}
