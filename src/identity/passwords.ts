import { hash, verify } from '@node-rs/argon2';
import { guessablePart } from './guessable.js';
import { IDENTITY_POLICY } from './policy.js';

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

/** What a new password is checked against besides the lists: the account's email and its workspaces' names. */
export interface PasswordContext {
  email: string;
  workspaces: { name: string; slug: string }[];
}

/**
 * zxcvbn-ts with the shipped lists (common passwords from leaks, names, English words, keyboard patterns); loaded and
 * built once, on first use, since the lists take most of a second and 62 modules to load, which every process that
 * never sets a password (the CLI's commands, most test files) would pay. No network: nothing is looked up elsewhere.
 */
interface Estimate {
  score: number;
  feedback: { warning: string | null };
}
let estimator: Promise<{ check(password: string, words: string[]): Estimate }> | undefined;
function strengthEstimator() {
  estimator ??= (async () => {
    const [zxcvbnCore, commonWords, englishWords] = await Promise.all([
      import('@zxcvbn-ts/core'),
      import('@zxcvbn-ts/language-common'),
      import('@zxcvbn-ts/language-en'),
    ]);
    return new zxcvbnCore.ZxcvbnFactory({
      dictionary: { ...commonWords.dictionary, ...englishWords.dictionary },
      graphs: commonWords.adjacencyGraphs,
      translations: englishWords.translations,
      // Bounded work per check (the library's defaults let a 40-character password cost seconds of CPU): the first 64
      // characters are scored (longer ones are strong if those are), with at most 8 l33t substitutions tried.
      maxLength: 64,
      l33tMaxSubstitutions: 8,
    });
  })();
  return estimator;
}

/** Letters and digits only, lower-cased: "Northstar-Visa" and "northstar visa" are one word to a guesser. */
const folded = (text: string) => text.toLowerCase().replace(/[^\p{L}\p{N}]/gu, '');

/** The words of the account and its workspaces a guesser tries first: the email, its parts, the names, the slugs. */
export function personalWords(context: PasswordContext): string[] {
  const [local = '', domain = ''] = context.email.toLowerCase().split('@');
  const words = [context.email, local, ...local.split(/[._+-]/), domain, ...domain.split('.')];
  for (const w of context.workspaces) words.push(w.name, w.slug, ...w.name.split(/\s+/), ...w.slug.split('-'));
  return [...new Set(words.map(folded).filter((w) => w.length >= 4))];
}

/** Why the lists refuse a password (a sentence for the form), or undefined when it is good. */
export const PASSWORD_REFUSALS = {
  short: `Choose a password of at least ${IDENTITY_POLICY.minPasswordLength} characters.`,
  long: `Choose a password of at most ${IDENTITY_POLICY.maxPasswordLength} characters.`,
  personal:
    'This password is built from your email or your workspace’s name, which is the first thing a guesser tries; choose one that is not.',
  common: 'Attackers try passwords like this one first; choose another (a few unrelated words make a strong one).',
  dated:
    'A season or a month with a year (as in Summer2026!) is among the first passwords attackers try; choose one not built on a date.',
} as const;

/** zxcvbn-ts's reason, when it gives one ("This is similar to a commonly used password."), before the advice. */
function commonRefusal(estimate: Estimate): string {
  return estimate.feedback.warning
    ? `${estimate.feedback.warning} ${PASSWORD_REFUSALS.common}`
    : PASSWORD_REFUSALS.common;
}

/**
 * Whether a new password may be set (NIST SP 800-63B, 3.1.1.2): long enough, not built from the account's email or its
 * workspaces' names (under substitutions too), nor from a season or month and a year, and not guessable from the
 * shipped lists (zxcvbn-ts scores it 3 or more: over 10^8 guesses). No composition rules: any characters, spaces
 * included.
 */
export async function passwordWeakness(password: string, context: PasswordContext): Promise<string | undefined> {
  if ([...password].length < IDENTITY_POLICY.minPasswordLength) return PASSWORD_REFUSALS.short;
  if ([...password].length > IDENTITY_POLICY.maxPasswordLength) return PASSWORD_REFUSALS.long;
  const words = personalWords(context);
  const plain = folded(password);
  if (words.some((w) => plain.includes(w) && w.length * 2 >= plain.length)) return PASSWORD_REFUSALS.personal;
  switch (guessablePart(password, words)) {
    case 'personal':
      return PASSWORD_REFUSALS.personal;
    case 'dated':
      return PASSWORD_REFUSALS.dated;
    case 'famous':
      return PASSWORD_REFUSALS.common;
    case undefined:
      break;
  }
  const estimate = (await strengthEstimator()).check(password, words);
  if (estimate.score < 3) return commonRefusal(estimate);
  return undefined;
}
