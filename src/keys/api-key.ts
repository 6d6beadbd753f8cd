import { createHash, randomBytes } from 'node:crypto';

/** The short, fixed, neutral prefix of every key this service issues. */
export const KEY_PREFIX = 'key';
const BODY_LENGTH = 32;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export type KeyKind = 'secret' | 'public';
export type KeyMode = 'live' | 'test';

const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}_(live|test)_(pub_)?([A-Za-z0-9]{${BODY_LENGTH}})$`);

/** Uniformly random letters and digits (rejection sampling keeps every character equally likely). */
export function randomAlphanumeric(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

/** `key_live_…`, `key_test_…`, `key_live_pub_…`, `key_test_pub_…`: the forms of the spec's Authentication section. */
export function generateKey(kind: KeyKind, mode: KeyMode): string {
  return `${KEY_PREFIX}_${mode}_${kind === 'public' ? 'pub_' : ''}${randomAlphanumeric(BODY_LENGTH)}`;
}

export function parseKey(value: string): { kind: KeyKind; mode: KeyMode } | undefined {
  const match = KEY_PATTERN.exec(value);
  if (!match) return undefined;
  return { mode: match[1] as KeyMode, kind: match[2] ? 'public' : 'secret' };
}

/** Keys carry 190 random bits, so a plain SHA-256 is a safe one-way store; lookup is by this hash, never by the key. */
export function hashKey(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
