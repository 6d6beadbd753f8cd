import type { BucketRequest, RateLimitStore } from '../ratelimit/token-bucket.js';
import type { Queryable } from '../storage/postgres.js';
import { findAccountByEmail, type StaffAccount } from './accounts.js';
import { decoyHash, passwordMatches } from './passwords.js';
import { IDENTITY_POLICY } from './policy.js';

/** One answer for every failed sign-in, so it tells no one which emails have accounts. */
export const SIGN_IN_REFUSED = 'That email and password do not match an account.';

export type SignInResult =
  { type: 'signed_in'; account: StaffAccount } | { type: 'refused' } | { type: 'throttled'; retryAfterSeconds: number };

function buckets(email: string, address: string): BucketRequest[] {
  return [
    { id: `sign-in:account:${email.toLowerCase()}`, scope: 'sign_in', spec: IDENTITY_POLICY.signInPerAccount },
    { id: `sign-in:address:${address}`, scope: 'sign_in', spec: IDENTITY_POLICY.signInPerAddress },
  ];
}

/**
 * Checks an email and password, throttled per account and per address: once either has used up its failures, no
 * password is checked until it refills. A failure costs one from both.
 */
export async function signInWithPassword(
  deps: { sql: Queryable; rateLimits: RateLimitStore },
  /** `address`: the client's address as failed authentications count it (src/http/auth.ts failureAddress). */
  input: { email: string; password: string; address: string },
): Promise<SignInResult> {
  const limits = buckets(input.email, input.address);
  const gate = await deps.rateLimits.peek(limits);
  if (!gate.allowed) return { type: 'throttled', retryAfterSeconds: gate.retryAfterSeconds };
  const account = await findAccountByEmail(deps.sql, input.email);
  const stored = account?.password_hash ?? (await decoyHash());
  const matches = await passwordMatches(stored, input.password);
  if (account?.password_hash && matches) return { type: 'signed_in', account };
  await deps.rateLimits.take(limits);
  return { type: 'refused' };
}
