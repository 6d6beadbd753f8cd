import type pg from 'pg';
import type { PersonalDataKeys } from './personal-data.js';

/*
 * Key rows of the derived formats (`s1:`, `s2:`, from before the wrapped `v2:` keys) hold what a key was derived from, not the key: `s1:` a 16-byte seed
 * (HMAC-SHA256 under the person-key-seed purpose key), `s2:` a 12-byte nonce (RFC 8452's AES derivation under the
 * person-key-nonce purpose key). No migration can rewrite them (it has no SECRET_ENCRYPTION_KEY), and the events
 * sealed under those keys cannot be sealed again (the hash chain covers their ciphertext): so the service, which has
 * the key, derives each key once at start-up and stores it wrapped, the one format (personal-data.ts).
 */
const BATCH = 500;

/**
 * Rewrites every key row of a derived format into the wrapped one, a batch at a time; returns how many. A row an
 * erasure emptied meanwhile stays empty: each is rewritten only while it still holds the value read.
 * Uses the partial index of migration 90, so a database with none left costs one empty index read.
 */
export async function rewriteDerivedKeyRows(pool: pg.Pool, keys: PersonalDataKeys): Promise<number> {
  let rewritten = 0;
  for (;;) {
    const found = await pool.query<{ stream_id: string; wrapped_key: string }>(
      `SELECT stream_id, wrapped_key FROM personal_data_keys WHERE wrapped_key LIKE 's%' ORDER BY stream_id LIMIT $1`,
      [BATCH],
    );
    if (found.rows.length === 0) return rewritten;
    await pool.query(
      `UPDATE personal_data_keys AS k SET wrapped_key = r.wrapped
         FROM unnest($1::text[], $2::text[], $3::text[]) AS r(stream_id, old, wrapped)
        WHERE k.stream_id = r.stream_id AND k.wrapped_key = r.old`,
      [
        found.rows.map((r) => r.stream_id),
        found.rows.map((r) => r.wrapped_key),
        found.rows.map((r) => keys.inOneFormat(r.wrapped_key)),
      ],
    );
    rewritten += found.rows.length;
  }
}
