/*
 * RFC 8785 (JSON Canonicalization Scheme) for the hash chain's content digests (chain.ts): object keys sorted by
 * their UTF-16 code units, no whitespace, numbers and strings written as ECMAScript's JSON.stringify writes them.
 *
 * Written here rather than taken from the `canonicalize` package, which gives the same text (a property test holds
 * the two equal over arbitrary JSON, test/events/canonical-json.test.ts) but scans every string for lone surrogates
 * one character at a time in JavaScript and tracks visited objects in a Set: every appended event is canonicalised,
 * and a sealed event carries a long base64 string. String.prototype.isWellFormed does the surrogate check natively.
 */

/** Values JSON cannot carry in a canonical form: NaN and infinities, and text with an unpaired surrogate. */
export class NotCanonicalisable extends Error {
  override name = 'NotCanonicalisable';
}

function primitive(value: unknown): string | undefined {
  if (typeof value === 'number' && !Number.isFinite(value)) throw new NotCanonicalisable(`${value} has no JSON form`);
  if (typeof value === 'string' && !value.isWellFormed())
    throw new NotCanonicalisable('A string holds an unpaired surrogate');
  // Numbers as ECMAScript writes them (RFC 8785 §3.2.2.3), strings with JSON.stringify's escapes (§3.2.2.2).
  return JSON.stringify(value);
}

/** A JSON value's canonical text, or undefined for what JSON.stringify leaves out (undefined, functions, symbols). */
export function canonicalJson(value: unknown, depth = 0): string | undefined {
  if (depth > 1000) throw new NotCanonicalisable('Nested too deeply (or circular)');
  if (value === null || typeof value !== 'object') return primitive(value);
  // Dates and other objects with toJSON say what they stand for, as for JSON.stringify.
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function')
    return canonicalJson((value as { toJSON: () => unknown }).toJSON(), depth + 1);
  if (Array.isArray(value)) {
    let text = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) text += ',';
      text += canonicalJson(value[i], depth + 1) ?? 'null';
    }
    return text + ']';
  }
  const object = value as Record<string, unknown>;
  // The default sort compares UTF-16 code units, which is RFC 8785's order (§3.2.3).
  const keys = Object.keys(object).sort();
  let text = '{';
  for (const key of keys) {
    const member = canonicalJson(object[key], depth + 1);
    if (member === undefined) continue;
    if (text.length > 1) text += ',';
    text += primitive(key) + ':' + member;
  }
  return text + '}';
}
