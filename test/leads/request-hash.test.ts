/*
 * The Idempotency-Key fingerprint of a request body: the same JSON value, whatever its key order or spacing, gives the
 * same hash; the text hashed is what the recursive form before 2026-11-30 hashed (stored answers of the last day still
 * match); and a body nested as deep as JSON.parse takes is fingerprinted without exhausting the stack.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { requestHash } from '../../src/intake/idempotency.js';
import { checkProperty } from '../support/properties.js';

/** The fingerprint as it was computed until 2026-11-30 (recursive): the reference the new one must equal. */
function earlierHash(body: unknown): string {
  const canonical = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(canonical);
    if (value && typeof value === 'object')
      return Object.fromEntries(
        Object.keys(value)
          .sort()
          .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
      );
    return value;
  };
  return createHash('sha256')
    .update(JSON.stringify(canonical(body)))
    .digest('hex');
}

/** Keys that sort differently as text and as JavaScript orders them (array indices first, numerically). */
const key = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom(
    '0',
    '1',
    '2',
    '10',
    '01',
    '-1',
    '1.5',
    '4294967294',
    '4294967295',
    '__proto__',
    'toString',
    'a',
    'B',
  ),
);
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.string({ maxLength: 8 }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(key, tie('value'), { maxKeys: 5 }),
  ),
})).value;

t.test('the fingerprint equals the earlier one for any JSON value', async (t) => {
  await checkProperty(
    t,
    'same text hashed as before',
    fc.property(json, (value) => {
      // As a request body arrives: parsed from its text (so `__proto__` is an own key, as JSON.parse makes it).
      const body: unknown = JSON.parse(JSON.stringify(value));
      return requestHash(body) === earlierHash(body);
    }),
    400,
  );
});

t.test('key order and spacing do not change it; a value does', async (t) => {
  const a = JSON.parse('{"b": [1, {"y": 2, "x": "é"}], "a": null, "10": true, "2": false}');
  const b = JSON.parse('{"2":false,"10":true,"a":null,"b":[1,{"x":"é","y":2}]}');
  t.equal(requestHash(a), requestHash(b));
  t.not(requestHash(a), requestHash({ ...b, a: 0 }));
  t.not(requestHash([1, 2]), requestHash([2, 1]), 'array order counts');
});

t.test('a body nested deeper than the stack goes is fingerprinted (the fuzz suite met a 500 there)', async (t) => {
  for (const open of ['[', '{"a":']) {
    const depth = 100_000;
    const close = open === '[' ? ']' : '}';
    const text = `{"toString":[${open.repeat(depth)}1${close.repeat(depth)}]}`;
    const hash = requestHash(JSON.parse(text));
    t.match(hash, /^[0-9a-f]{64}$/, `${depth.toLocaleString('en')} levels of ${open}`);
    t.equal(requestHash(JSON.parse(text)), hash, 'the same again');
    t.not(requestHash(JSON.parse(text.replace('1', '2'))), hash, 'the value deep inside counts');
  }
});
