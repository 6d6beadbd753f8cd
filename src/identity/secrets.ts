import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** A new random secret: the prefix says what it is (as API keys do), 32 random bytes in base64url follow. */
export function newSecret(prefix: string): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}

/** What is stored of a secret: its SHA-256 (secrets are 256 random bits, so a fast hash is enough). */
export function secretHash(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** A value derived from a secret for one purpose (for example a session's CSRF token), unknowable without it. */
export function derived(secret: string, purpose: string): string {
  return createHmac('sha256', secret).update(purpose).digest('base64url');
}

/** Compares two strings in constant time (hashing first makes the lengths equal). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(secretHash(a), secretHash(b));
}
