import fc from 'fast-check';
import type { Test } from 'tap';

/**
 * Runs a fast-check property with a seed printed beforehand (and again on failure); FC_SEED replays a run. Seeds that
 * once failed are kept in `keptSeeds` and run first, every time, as regression cases. The failure message carries
 * fast-check's counterexample, shrunk.
 */
export async function checkProperty<Ts extends [unknown, ...unknown[]]>(
  t: Test,
  name: string,
  property: fc.IProperty<Ts> | fc.IAsyncProperty<Ts>,
  numRuns: number,
  keptSeeds: readonly number[] = [],
): Promise<void> {
  for (const seed of keptSeeds) await runSeed(t, `${name} (kept seed)`, property, numRuns, seed);
  const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : Math.floor(Math.random() * 2 ** 31);
  t.comment(`${name}: fast-check seed ${seed} (FC_SEED=${seed} replays it)`);
  await runSeed(t, name, property, numRuns, seed);
}

async function runSeed<Ts extends [unknown, ...unknown[]]>(
  t: Test,
  name: string,
  property: fc.IProperty<Ts> | fc.IAsyncProperty<Ts>,
  numRuns: number,
  seed: number,
): Promise<void> {
  try {
    await fc.assert(property as fc.IAsyncProperty<Ts>, { seed, numRuns });
    t.pass(`${name} (${numRuns} runs)`);
  } catch (error) {
    const cause = (error as Error).cause;
    const why = cause instanceof Error ? cause.message : String(cause ?? '');
    // TAP reads U+2028 and U+2029 as line ends; written as escapes, the counterexample stays readable.
    const report = `${(error as Error).message}\n${why}`.replace(
      /[\u2028\u2029]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16)}`,
    );
    t.fail(`${name}: failed with seed ${seed}\n${report}`);
  }
}

/** Pieces of text that are awkward but storable: quotes, backslashes, SQL and JSON punctuation, other scripts, surrogate pairs. */
const PIECES = [
  ...['a', 'Z', ' ', 'é', 'ß', '漢', 'अ', '😀', '𝄞', "'", '"', '\\', '$1', '$$', '--', '{', ']', ',', '%', ':'],
  // Odd but storable: controls other than NUL, line separators, noncharacters, a byte order mark.
  ...['\t', '\n', '\u0001', '\u001f', '\u007f', '\u2028', '\uFFFE', '\uFFFF', '\uFEFF'],
];

/** A storable string of up to `max` characters, built from awkward pieces. */
export const goodText = (max: number) =>
  fc
    .array(fc.constantFrom(...PIECES), { maxLength: Math.min(max, 12) })
    .map((parts) => parts.join('').slice(0, max))
    .filter((s) => !/[\uD800-\uDBFF]$/.test(s));

/** A character no field may hold: a NUL or an unpaired surrogate (high or low). */
export const badChar = fc.constantFrom('\u0000', '\uD800', '\uDBFF', '\uDC00', '\uDFFF');

/** A storable string with one character no field may hold put somewhere in it, never next to a surrogate pair half. */
export const badText = (max: number) =>
  fc.tuple(goodText(Math.max(max - 1, 0)), badChar, fc.nat()).map(([text, bad, at]) => {
    const chars = Array.from(text);
    chars.splice(at % (chars.length + 1), 0, bad);
    return chars.join('');
  });
