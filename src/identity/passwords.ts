import { hash, verify } from '@node-rs/argon2';

// argon2id (the library's default algorithm) with its default cost: 19 MiB, two passes (OWASP's first choice).
export function hashPassword(password: string): Promise<string> {
  return hash(password);
}

/** Whether the password is the one hashed; a malformed hash is a mismatch. */
export async function passwordMatches(stored: string, password: string): Promise<boolean> {
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}

/** A hash to verify against when there is no account, so a wrong email costs as long as a wrong password. */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hash('no account has this password');
  return decoy;
}
