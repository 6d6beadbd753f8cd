import fc from 'fast-check';
import t from 'tap';
import {
  CANONICAL_UUID,
  dateTimeInstant,
  hasValueProblems,
  printable,
  textProblem,
  valueProblems,
} from '../../src/http/edge-values.js';
import { fieldName } from '../../src/http/errors.js';
import { dateTimeParts, expectedInstant, renderDateTime } from '../support/date-times.js';
import { badText, checkProperty, goodText } from '../support/properties.js';

t.test('date-times: accepted exactly when PostgreSQL, JavaScript and the answers can all hold them', async (t) => {
  for (const [value, instant] of [
    ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
    ['9999-12-31T23:59:59+23:59', '9999-12-31T00:00:59.000Z'],
    ['0001-01-01T23:58:00-00:01', '0001-01-01T23:59:00.000Z'],
    ['2026-11-01 10:00:00.120000z', '2026-11-01T10:00:00.120Z'],
    ['2026-11-01T15:30:00+0530', '2026-11-01T10:00:00.000Z'],
    ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
  ] as const)
    t.equal(new Date(dateTimeInstant(value)!).toISOString(), instant, `${value} is ${instant}`);
  for (const value of [
    '0000-01-01T00:00:00Z',
    '0001-01-01T00:00:00+00:01',
    '2024-12-31T23:59:60Z',
    '2024-06-30T23:59:60Z',
    '9999-12-31T23:59:59-23:59',
    '9999-12-31T23:59:59.999-00:01',
    '2024-01-01T00:00:00+05',
    '2024-01-01T00:00:00.1234Z',
    '2024-01-01T00:00:00.123456789Z',
    '2023-02-29T00:00:00Z',
    '2024-01-01T24:00:00Z',
    '2024-01-01T00:00:00',
    '2024-01-01T00:00:00+24:00',
    '+002024-01-01T00:00:00Z',
    '2024-01-01\t00:00:00Z',
    '2024-01-01T00:00:00.Z',
  ])
    t.equal(dateTimeInstant(value), undefined, `${value} is refused`);

  await checkProperty(
    t,
    'any date-time: accepted as the oracle says, at the instant it says',
    fc.property(dateTimeParts, (parts) => {
      const text = renderDateTime(parts);
      const expected = expectedInstant(parts);
      const actual = dateTimeInstant(text);
      if (actual !== expected) throw new Error(`${text}: expected ${expected}, got ${actual}`);
      if (actual !== undefined && new Date(actual).toISOString().length !== 24)
        throw new Error(`${text}: not shown as YYYY-MM-DDTHH:MM:SS.sssZ`);
    }),
    20_000,
  );
});

t.test('uuids: only the canonical 8-4-4-4-12 form, in either case', async (t) => {
  t.ok(CANONICAL_UUID.test('01234567-89ab-cdef-0123-456789abcdef'));
  t.ok(CANONICAL_UUID.test('01234567-89AB-CDEF-0123-456789ABCDEF'));
  for (const bad of [
    'urn:uuid:01234567-89ab-cdef-0123-456789abcdef',
    '{01234567-89ab-cdef-0123-456789abcdef}',
    '0123456789abcdef0123456789abcdef',
    '01234567-89ab-cdef-0123-456789abcdef\n',
    ' 01234567-89ab-cdef-0123-456789abcdef',
    '01234567-89ab-cdef-0123-456789abcdeg',
  ])
    t.notOk(CANONICAL_UUID.test(bad), JSON.stringify(bad));
});

t.test('text: NULs and unpaired surrogates are found; pairs and everything else pass', async (t) => {
  t.equal(textProblem('a😀b'), undefined, 'a surrogate pair is a character');
  t.equal(textProblem('\uFFFF\uFFFE\u2028\u0001'), undefined, 'noncharacters and controls other than NUL are storable');
  t.match(textProblem('a\u0000'), /NUL/);
  t.match(textProblem('\uD83D'), /surrogate/);
  t.match(textProblem('\uDE00x'), /surrogate/);
  t.match(textProblem('\uDE00\uD83D'), /surrogate/, 'a pair in the wrong order is two unpaired halves');
  t.equal(printable('a\u0000b\uD800😀'), 'a\\u0000b\\ud800😀');
  t.equal(
    fieldName({ keyword: 'text', instancePath: '/custom_fields/a~1b~0c/x\u0000', params: {} }),
    'custom_fields.a/b~c.x\\u0000',
    'keys are shown as sent, with NULs written as escapes',
  );
});

type Tree = string | number | boolean | null | Tree[] | { [key: string]: Tree };
interface Tagged {
  value: Tree;
  bad: string[];
}

const pointer = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

/** A JSON value with some NULs, unpaired surrogates (in values and keys) and infinite numbers; `bad` lists where. */
const taggedTree: fc.Arbitrary<Tagged> = fc.letrec<{ node: Tagged }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    goodText(20).map((value): Tagged => ({ value, bad: [] })),
    badText(20).map((value) => ({ value, bad: [''] })),
    fc.double({ noNaN: true }).map((value) => ({ value, bad: Number.isFinite(value) ? [] : [''] })),
    fc.constantFrom(true, false, null).map((value) => ({ value, bad: [] })),
    fc.array(tie('node'), { maxLength: 4 }).map((items) => ({
      value: items.map((i) => i.value),
      bad: items.flatMap((item, i) => item.bad.map((p) => `/${i}${p}`)),
    })),
    fc
      .uniqueArray(fc.tuple(fc.oneof(goodText(8), badText(8)), tie('node')), {
        maxLength: 4,
        selector: ([key]) => key,
      })
      .map((entries) => ({
        value: Object.fromEntries(entries.map(([k, v]) => [k, v.value])),
        bad: entries.flatMap(([key, v]) =>
          textProblem(key) ? [`/${pointer(key)}`] : v.bad.map((p) => `/${pointer(key)}${p}`),
        ),
      })),
  ),
})).node;

t.test('valueProblems finds exactly the unstorable strings, keys and numbers, at their paths', async (t) => {
  await checkProperty(
    t,
    'every bad place named, nothing else',
    fc.property(taggedTree, ({ value, bad }) => {
      const found = valueProblems(value).map((p) => p.instancePath);
      if (JSON.stringify(found.sort()) !== JSON.stringify([...bad].sort()))
        throw new Error(`expected ${JSON.stringify(bad)}, found ${JSON.stringify(found)}`);
    }),
    3000,
  );
  let deep: unknown = 'x\u0000';
  for (let i = 0; i < 200_000; i++) deep = [deep];
  t.equal(valueProblems(deep).length, 1, 'nesting 200,000 deep does not exhaust the stack');
});

t.test('hasValueProblems answers whether valueProblems finds anything', async (t) => {
  await checkProperty(
    t,
    'the quick check agrees with the full walk',
    fc.property(taggedTree, ({ value, bad }) => {
      if (hasValueProblems(value) !== bad.length > 0)
        throw new Error(`expected ${bad.length > 0}, found ${!(bad.length > 0)} for ${JSON.stringify(bad)}`);
    }),
    3000,
  );
  let deep: unknown = 'x\u0000';
  for (let i = 0; i < 200_000; i++) deep = [deep];
  t.equal(hasValueProblems(deep), true, 'nesting 200,000 deep does not exhaust the stack');
});
