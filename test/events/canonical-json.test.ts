import { isDeepStrictEqual } from 'node:util';
import { test } from 'tap';
import fc from 'fast-check';
import canonicalize from 'canonicalize';
import { canonicalJson } from '../../src/events/canonical-json.js';
import { checkProperty } from '../support/properties.js';

// The `canonicalize` package (RFC 8785's reference for JavaScript) is the oracle: the chain's digests were taken with
// it before, so every stored hash stays valid only if the two write the same text for every JSON value.

/** What a canonicaliser gives: its text, or that it refused. */
function outcome(canonicalise: (value: unknown) => string | undefined, value: unknown): string {
  try {
    return `text ${canonicalise(value)}`;
  } catch {
    return 'refused';
  }
}

test('RFC 8785 examples: numbers, escapes and literals (§3.2.2), key order by UTF-16 code units (§3.2.3)', async (t) => {
  const example = JSON.parse(
    '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],' +
      '"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
  ) as unknown;
  t.equal(
    canonicalJson(example),
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
      '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
  );
  const sorting = {
    '\u20ac': 'Euro Sign',
    '\r': 'Carriage Return',
    '\ufb33': 'Hebrew Letter Dalet With Dagesh',
    '1': 'One',
    '\ud83d\ude00': 'Emoji: Grinning Face',
    '\u0080': 'Control',
    '\u00f6': 'Latin Small Letter O With Diaeresis',
  };
  // Read off the text: Object.keys would put the integer-like "1" first whatever the order.
  t.same(
    [...canonicalJson(sorting)!.matchAll(/"([^"]*)":/g)].map((m) => JSON.parse(`"${m[1]}"`) as string),
    ['\r', '1', '\u0080', '\u00f6', '\u20ac', '\ud83d\ude00', '\ufb33'],
    'keys in UTF-16 code unit order (the emoji, a surrogate pair, before U+FB33)',
  );
  t.equal(canonicalJson(-0), '0', 'minus zero is written 0');
  t.equal(
    canonicalJson({ a: undefined, b: [undefined], c: new Date(Date.UTC(2026, 10, 26)) }),
    '{"b":[null],"c":"2026-11-26T00:00:00.000Z"}',
    'as JSON.stringify: undefined members left out, undefined elements null, dates by toJSON',
  );
});

test('values with no canonical form are refused', async (t) => {
  for (const bad of [NaN, Infinity, -Infinity, '\ud800', 'a\udc00b', { ['\udbff']: 1 }, [1, { x: 'tail \ud83d' }]])
    t.throws(() => canonicalJson(bad), { name: 'NotCanonicalisable' }, String(bad));
  const circular: Record<string, unknown> = {};
  circular.self = circular;
  t.throws(() => canonicalJson(circular), { name: 'NotCanonicalisable' }, 'a circular value');
});

test('the same text as the canonicalize package for any JSON value', async (t) => {
  await checkProperty(
    t,
    'canonical JSON equals the reference over well-formed JSON',
    fc.property(fc.jsonValue({ stringUnit: 'binary', maxDepth: 5 }), (value) => {
      const ours = canonicalJson(value);
      if (ours !== canonicalize(value)) throw new Error(`differs: ${ours} / ${canonicalize(value)}`);
      if (ours !== undefined && !isDeepStrictEqual(JSON.parse(ours), value) && !hasMinusZero(value))
        throw new Error('the text does not read back as the value');
    }),
    1000,
  );
  // 16-bit units make lone surrogates; doubles take in NaN and the infinities: both refuse, or both agree.
  const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code));
  const awkward = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      fc.string({ unit: anyUnit, maxLength: 8 }),
      fc.double(),
      fc.constantFrom(null, true, false),
      fc.array(tie('value'), { maxLength: 4 }),
      fc.dictionary(fc.string({ unit: anyUnit, maxLength: 4 }), tie('value'), { maxKeys: 4 }),
    ),
  })).value;
  await checkProperty(
    t,
    'canonical JSON refuses what the reference refuses, over 16-bit strings and any double',
    fc.property(awkward, (value) => {
      const ours = outcome(canonicalJson, value);
      const theirs = outcome(canonicalize, value);
      if (ours !== theirs) throw new Error(`ours ${ours}, reference ${theirs}`);
    }),
    1000,
  );
});

function hasMinusZero(value: unknown): boolean {
  if (Object.is(value, -0)) return true;
  return typeof value === 'object' && value !== null && Object.values(value).some(hasMinusZero);
}
