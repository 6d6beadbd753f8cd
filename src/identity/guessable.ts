/**
 * Passwords built from what a guesser tries before any list: the account's own words, a season or a month with a
 * year, a famous example password, each also under the common substitutions (3 for e, @ for a, 1 for i or l…).
 * zxcvbn-ts scores `Summer2026!!` and `W3ndy@Sunr1se` (for wendy@sunrise…) as strong; these rules refuse them.
 */

/** The characters a guesser's rules substitute for each letter (leetspeak), the letter itself first. */
const SUBSTITUTES: Record<string, string> = {
  a: 'a4@',
  b: 'b8',
  e: 'e3',
  g: 'g96',
  i: 'i1!|',
  l: 'l1|!',
  o: 'o0',
  s: 's5$',
  t: 't7+',
  z: 'z2',
};

const SEASONS = ['spring', 'summer', 'autumn', 'fall', 'winter', 'monsoon'];
const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];
const MONTH_ABBREVIATIONS = ['jan', 'feb', 'mar', 'apr', 'jun', 'jul', 'aug', 'sep', 'sept', 'oct', 'nov', 'dec'];
/** Example passwords known from everywhere they were shown (the "Tr0ub4dor&3" of xkcd 936). */
const FAMOUS = ['troubador&3', 'troubador'];

/** What covers a guessable password, for the sentence that says why it is refused. */
export type GuessablePart = 'personal' | 'dated' | 'famous';

/** The letters and digits left for a guesser to find once the guessable parts are taken out: fewer is refused. */
const LEAST_LEFT = 5;

const escape = (c: string) => c.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&');

/** A word as a pattern that also matches it under substitutions, with a separator allowed between its letters. */
function substituted(word: string): string {
  return [...word]
    .map((c) => {
      const options = SUBSTITUTES[c] ?? c;
      return options.length > 1 ? `[${[...options].map(escape).join('')}]` : escape(c);
    })
    .join('[\\s._-]?');
}

function alternation(words: readonly string[]): RegExp {
  // Longest first, so "september" is taken out whole rather than as "sep" and a remainder.
  const sorted = [...new Set(words)].filter((w) => w.length > 0).sort((a, b) => b.length - a.length);
  return new RegExp(sorted.map(substituted).join('|'), 'giu');
}

const DATED = alternation([...SEASONS, ...MONTHS, ...MONTH_ABBREVIATIONS]);
const FAMOUS_WORDS = alternation(FAMOUS);
const YEAR = /(?:19|20)\d\d/g;
const LETTERS_AND_DIGITS = /[\p{L}\p{N}]/gu;

/**
 * Which guessable part a password is built from, or undefined when enough of it is left once the account's words
 * (`personal`, lower case), seasons, months, years and famous examples are taken out.
 */
export function guessablePart(password: string, personal: readonly string[]): GuessablePart | undefined {
  let rest = password.toLowerCase();
  const found = new Set<GuessablePart>();
  const takeOut = (pattern: RegExp, part: GuessablePart) => {
    const next = rest.replace(pattern, '');
    if (next !== rest) found.add(part);
    rest = next;
  };
  if (personal.length > 0) takeOut(alternation(personal), 'personal');
  takeOut(FAMOUS_WORDS, 'famous');
  takeOut(DATED, 'dated');
  const beforeYears = rest;
  rest = rest.replace(YEAR, '');
  if (found.size === 0) return undefined;
  // A year counts with the words it follows (Summer2026): alone it is a number among others.
  if (rest !== beforeYears && !found.has('personal') && !found.has('famous')) found.add('dated');
  if ((rest.match(LETTERS_AND_DIGITS) ?? []).length >= LEAST_LEFT) return undefined;
  if (found.has('personal')) return 'personal';
  return found.has('famous') ? 'famous' : 'dated';
}
