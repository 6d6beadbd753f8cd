import type { BucketRequest, RateLimitStore } from '../ratelimit/token-bucket.js';
import type { Queryable } from '../storage/postgres.js';
import type { StaffAccount } from './accounts.js';
import { decoyHash, passwordMatches } from './passwords.js';
import { IDENTITY_POLICY } from './policy.js';

/** One answer for every failed sign-in, so it tells no one which emails have accounts. */
export const SIGN_IN_REFUSED = 'That email and password do not match an account.';

export type SignInResult =
  | { type: 'signed_in'; account: StaffAccount }
  | { type: 'refused' }
  | { type: 'throttled'; retryAfterSeconds: number; knownAddress: boolean };

/**
 * The door a password attempt comes through: the account (by email, so an unknown email is throttled exactly like a
 * known one) and the client's address as failed authentications count it (src/http/auth.ts failureAddress).
 */
export interface PasswordDoor {
  email: string;
  address: string;
  /** Whether the account signed in from this address lately: its owner's own door. */
  known: boolean;
}

/**
 * The buckets an attempt takes from before its password is checked (docs/decisions.md, "Staff identity"): an address
 * the account signed in from has a bucket of its own, which failures from anywhere else never touch; every other
 * address has a slower one, and all of them together share one more per account. A stranger spraying from elsewhere
 * can so exhaust only the buckets of addresses the owner never signed in from.
 */
export function attemptBuckets(door: PasswordDoor): BucketRequest[] {
  const email = door.email.toLowerCase();
  if (door.known)
    return [
      { id: `sign-in:known:${email}:${door.address}`, scope: 'sign_in', spec: IDENTITY_POLICY.signInKnownAddress },
    ];
  return [
    { id: `sign-in:new:${email}:${door.address}`, scope: 'sign_in', spec: IDENTITY_POLICY.signInNewAddress },
    { id: `sign-in:new:${email}`, scope: 'sign_in', spec: IDENTITY_POLICY.signInNewAddresses },
  ];
}

/** Failures from one address over every account: a sprayer of many accounts meets this one. */
export function addressBucket(address: string): BucketRequest {
  return { id: `sign-in:address:${address}`, scope: 'sign_in', spec: IDENTITY_POLICY.signInPerAddress };
}

/** The account of the email and whether it signed in from the address lately, in one query whether it exists or not. */
async function accountAtDoor(
  sql: Queryable,
  email: string,
  address: string,
  now: Date,
): Promise<(StaffAccount & { known: boolean }) | undefined> {
  const since = new Date(now.getTime() - IDENTITY_POLICY.knownAddressMs);
  const result = await sql.query<StaffAccount & { known: boolean }>(
    `SELECT a.id, a.email, a.name, a.password_hash,
            EXISTS (SELECT 1 FROM staff_known_addresses k
                     WHERE k.account_id = a.id AND k.address = $2 AND k.last_signed_in_at > $3) AS known
       FROM staff_accounts a WHERE a.email = $1`,
    [email.toLowerCase(), address, since],
  );
  return result.rows[0];
}

/** The account signed in from this address now: from here on its failures there never meet a stranger's. */
export async function rememberAddress(sql: Queryable, accountId: string, address: string, now: Date): Promise<void> {
  await sql.query(
    `INSERT INTO staff_known_addresses (account_id, address, last_signed_in_at) VALUES ($1, $2, $3)
     ON CONFLICT (account_id, address) DO UPDATE SET last_signed_in_at = GREATEST(staff_known_addresses.last_signed_in_at, $3)`,
    [accountId, address, now],
  );
}

/**
 * Checks an email and password, throttled: once the address has used up its failures over every account, or the
 * account's buckets for this door are empty, no password is checked. Every attempt costs one from the account's
 * buckets before the check (so concurrent guesses cannot all pass a look first); a failure costs one from the
 * address's too. Used by the sign-in form and by every re-entry of the password inside a session.
 */
export async function checkPassword(
  deps: { sql: Queryable; rateLimits: RateLimitStore; now: () => Date },
  input: { email: string; password: string; address: string },
): Promise<SignInResult> {
  const account = await accountAtDoor(deps.sql, input.email, input.address, deps.now());
  const door = { email: input.email, address: input.address, known: account?.known ?? false };
  const perAddress = await deps.rateLimits.peek([addressBucket(input.address)]);
  const gate = perAddress.allowed ? await deps.rateLimits.take(attemptBuckets(door)) : perAddress;
  if (!gate.allowed) return { type: 'throttled', retryAfterSeconds: gate.retryAfterSeconds, knownAddress: door.known };
  const stored = account?.password_hash ?? (await decoyHash());
  const matches = await passwordMatches(stored, input.password);
  if (account?.password_hash && matches)
    return {
      type: 'signed_in',
      account: { id: account.id, email: account.email, name: account.name, password_hash: account.password_hash },
    };
  await deps.rateLimits.take([addressBucket(input.address)]);
  return { type: 'refused' };
}
