import type { Queryable } from '../storage/postgres.js';
import { newSecret, secretHash } from './secrets.js';

export interface StoredPasskey {
  credential_id: string;
  account_id: string;
  public_key: Buffer;
  counter: number;
  transports: string[];
  name: string;
  created_at: Date;
  last_used_at: Date | null;
}

const COLUMNS = 'credential_id, account_id, public_key, counter, transports, name, created_at, last_used_at';

export async function savePasskey(
  sql: Queryable,
  p: {
    credentialId: string;
    accountId: string;
    publicKey: Uint8Array;
    counter: number;
    transports: string[];
    name: string;
    now: Date;
  },
): Promise<void> {
  await sql.query(
    `INSERT INTO staff_passkeys (credential_id, account_id, public_key, counter, transports, name, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [p.credentialId, p.accountId, Buffer.from(p.publicKey), p.counter, p.transports, p.name, p.now],
  );
}

export async function passkeysOf(sql: Queryable, accountId: string): Promise<StoredPasskey[]> {
  return (
    await sql.query<StoredPasskey>(`SELECT ${COLUMNS} FROM staff_passkeys WHERE account_id = $1 ORDER BY created_at`, [
      accountId,
    ])
  ).rows;
}

export async function findPasskey(sql: Queryable, credentialId: string): Promise<StoredPasskey | undefined> {
  return (
    await sql.query<StoredPasskey>(`SELECT ${COLUMNS} FROM staff_passkeys WHERE credential_id = $1`, [credentialId])
  ).rows[0];
}

export async function recordPasskeyUse(
  sql: Queryable,
  credentialId: string,
  counter: number,
  now: Date,
): Promise<void> {
  await sql.query('UPDATE staff_passkeys SET counter = $2, last_used_at = $3 WHERE credential_id = $1', [
    credentialId,
    counter,
    now,
  ]);
}

export async function removePasskey(sql: Queryable, accountId: string, credentialId: string): Promise<boolean> {
  const result = await sql.query('DELETE FROM staff_passkeys WHERE account_id = $1 AND credential_id = $2', [
    accountId,
    credentialId,
  ]);
  return (result.rowCount ?? 0) > 0;
}

/** Keeps a WebAuthn challenge for five minutes under a fresh random handle (only its hash stored); returns the handle. */
export async function keepChallenge(
  sql: Queryable,
  challenge: string,
  accountId: string | null,
  now: Date,
): Promise<string> {
  const handle = newSecret('');
  await sql.query('DELETE FROM staff_challenges WHERE expires_at <= $1', [now]);
  await sql.query('INSERT INTO staff_challenges (id_hash, challenge, account_id, expires_at) VALUES ($1, $2, $3, $4)', [
    secretHash(handle),
    challenge,
    accountId,
    new Date(now.getTime() + 5 * 60_000),
  ]);
  return handle;
}

/** Takes the challenge of a handle (once): undefined when unknown, used or expired. */
export async function takeChallenge(
  sql: Queryable,
  handle: string,
  now: Date,
): Promise<{ challenge: string; account_id: string | null } | undefined> {
  const result = await sql.query<{ challenge: string; account_id: string | null }>(
    'DELETE FROM staff_challenges WHERE id_hash = $1 AND expires_at > $2 RETURNING challenge, account_id',
    [secretHash(handle), now],
  );
  return result.rows[0];
}
