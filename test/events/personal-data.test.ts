import { randomBytes, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import {
  isSealed,
  openEvent,
  PersonalDataKeys,
  SEALED_FIELD,
  sealEvent,
  type EventPlace,
} from '../../src/events/personal-data.js';
import {
  extractPersonal,
  holdsPersonalData,
  isErasedValue,
  locate,
  PERSONAL_FIELDS,
  saysPersonalData,
  type Location,
} from '../../src/events/personal-fields.js';
import { randomFromPool } from '../../src/shared/random-pool.js';
import { NonceKeyDerivation, SecretBox } from '../../src/shared/secret-box.js';
import { checkProperty, goodText } from '../support/properties.js';
import { TRICKY_ROWS } from '../support/tricky-values.js';

const box = new SecretBox(Buffer.alloc(32, 9));

/** The value at a location, read here rather than with personal-fields.ts's own walk (the test's oracle). */
function readAt(data: unknown, location: Location): unknown {
  let value = data;
  for (const key of location) {
    if (typeof value !== 'object' || value === null) return undefined;
    if (Array.isArray(value)) value = typeof key === 'number' ? value[key] : undefined;
    else
      value =
        typeof key === 'string' && Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
  }
  return value;
}

/** Every string of the tricky rows (quotes, backslashes, SQL and JSON punctuation, empty). */
const trickyStrings = TRICKY_ROWS.flat().filter((v): v is string => typeof v === 'string');
const text = fc.oneof(goodText(60), fc.constantFrom(...trickyStrings));
/** JSON as jsonb keeps it: no -0, no lone surrogates are produced by the service's edge. */
const json = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);

const leadPayload = fc.record({
  id: fc.uuid(),
  full_name: text,
  phone: fc.option(text),
  alt_phone: fc.option(text),
  email: fc.option(text),
  city: fc.option(text),
  state: fc.option(text),
  date_of_birth: fc.option(text),
  landing_page_url: fc.option(text),
  utm: fc.option(fc.dictionary(fc.constantFrom('source', 'medium', 'campaign'), text)),
  campaign: fc.option(text),
  custom_fields: fc.dictionary(fc.string({ maxLength: 8 }), json),
  visa_type: fc.constantFrom('student', null),
  stage: fc.constant({ key: 'new', name: 'New' }),
});

const leadEvent = fc.oneof(
  fc.record({ type: fc.constant('lead.created'), data: fc.record({ payload: leadPayload, message: fc.option(text) }) }),
  fc.record({ type: fc.constant('lead.updated'), data: fc.record({ payload: leadPayload }) }),
  fc.record({
    type: fc.constant('lead.note_added'),
    data: fc.record({ at: fc.constant('2026-11-20T10:00:00.000Z'), note: text }),
  }),
  fc.record({
    type: fc.constant('application.opened'),
    data: fc.record({
      lead_id: fc.uuid(),
      modules: fc.array(fc.record({ key: fc.string(), details: fc.dictionary(fc.string({ maxLength: 5 }), json) }), {
        maxLength: 3,
      }),
    }),
  }),
);

function place(type: string): EventPlace {
  return { tenantId: randomUUID(), streamId: `lead-${randomUUID()}`, id: randomUUID(), type };
}

/** Stored as jsonb would store it: through JSON text. */
const throughJson = (value: Record<string, unknown>) => JSON.parse(JSON.stringify(value)) as Record<string, unknown>;

t.test(
  'property: sealed personal values open to exactly what was said, and read as erased without the key',
  async (t) => {
    const keys = PersonalDataKeys.of(box);
    await checkProperty(
      t,
      'seal/open round trip',
      fc.property(leadEvent, ({ type, data }) => {
        const where = place(type);
        const { key } = keys.newKey();
        const asGiven = JSON.stringify(data);
        const stored = throughJson(sealEvent(where, data, key));
        const said = throughJson(data);
        // Sealing copies: the event the caller holds (and projections apply) is not changed.
        if (JSON.stringify(data) !== asGiven) return false;
        // Opened with the key: what was said.
        if (JSON.stringify(openEvent(where, stored, key)) !== JSON.stringify(said)) return false;
        // Without it: every personal field erased, every other value as said, no envelope left.
        const erased = openEvent(where, stored, null);
        if (SEALED_FIELD in erased) return false;
        for (const field of PERSONAL_FIELDS[type] ?? [])
          for (const location of locate(said, field.path))
            if (JSON.stringify(readAt(erased, location)) !== JSON.stringify(field.erased)) return false;
        const { payload: erasedPayload, ...erasedRest } = erased as { payload?: Record<string, unknown> };
        const { payload: saidPayload, ...saidRest } = said as { payload?: Record<string, unknown> };
        if (saidPayload && erasedPayload) {
          if (erasedPayload.id !== saidPayload.id || erasedPayload.visa_type !== saidPayload.visa_type) return false;
        }
        // The stored data says nothing personal in the clear: the personal fields hold their erased values.
        const clear = { ...stored };
        delete clear[SEALED_FIELD];
        if (JSON.stringify(clear) !== JSON.stringify(erased)) return false;
        return Object.keys(erasedRest).length === Object.keys(saidRest).length;
      }),
      300,
    );
  },
);

t.test(
  'property: holdsPersonalData and saysPersonalData agree with the fields found and the values sealed',
  async (t) => {
    await checkProperty(
      t,
      'holds and says',
      fc.property(leadEvent, ({ type, data }) => {
        const found = (PERSONAL_FIELDS[type] ?? []).map((f) => ({ f, at: locate(data, f.path) }));
        // Holds: some personal field is present, whatever its value (an application with no modules holds none).
        const present = found.some(({ at }) => at.length > 0);
        if (holdsPersonalData(type, data) !== present) return false;
        // Says: some present value is not its erased value, read with the test's own reader; sealing then takes it out.
        const says = found.some(({ f, at }) => at.some((l) => !isErasedValue(readAt(data, l), f.erased)));
        return saysPersonalData(type, data) === says && extractPersonal(type, data).values.length > 0 === says;
      }),
      300,
    );
  },
);

t.test('a sealed value is bound to its workspace, stream and event, and to its stream key', async (t) => {
  const keys = PersonalDataKeys.of(box);
  const { key } = keys.newKey();
  const where = place('lead.note_added');
  const stored = sealEvent(where, { at: 'x', note: 'call Ana on +919812345678' }, key);
  t.ok(isSealed(stored));
  t.notMatch(JSON.stringify(stored), /Ana|9812345678/, 'nothing of the note in the clear');
  t.same(openEvent(where, stored, key), { at: 'x', note: 'call Ana on +919812345678' });
  t.throws(() => openEvent({ ...where, id: randomUUID() }, stored, key), 'another event id does not open it');
  t.throws(() => openEvent({ ...where, streamId: `lead-${randomUUID()}` }, stored, key), 'another stream does not');
  t.throws(() => openEvent({ ...where, tenantId: randomUUID() }, stored, key), 'another workspace does not');
  t.throws(() => openEvent(where, stored, keys.newKey().key), 'another key does not');
  t.same(openEvent(where, { at: 'x', note: 'plain' }, null), { at: 'x', note: 'plain' }, 'plaintext reads as is');
  t.equal(sealEvent(where, { at: 'x' }, key).at, 'x', 'an event without personal fields is stored as given');
});

t.test('values that already are their erased value are left in the clear, not sealed', async (t) => {
  const keys = PersonalDataKeys.of(box);
  const { key } = keys.newKey();
  const where = place('lead.created');
  const empty = { full_name: '', phone: null, email: null, custom_fields: {}, utm: null, visa_type: 'student' };
  const said = { payload: { ...empty, id: where.streamId.slice(5) }, message: null };
  t.same(sealEvent(where, said, key), said, 'an event whose personal values are all empty is stored as given');
  t.notOk(isSealed(sealEvent(where, said, key)));

  const withPhone = { ...said, payload: { ...said.payload, phone: '+919812345678', custom_fields: { a: 1 } } };
  const stored = sealEvent(where, withPhone, key);
  const raw = Buffer.from((stored[SEALED_FIELD] as { sealed: string }).sealed, 'base64');
  // iv (12) and tag (16), then the sealed JSON of the two values with their locations, and nothing else.
  const twoValues = JSON.stringify([
    [['payload', 'phone'], '+919812345678'],
    [['payload', 'custom_fields'], { a: 1 }],
  ]);
  t.equal(raw.length, 28 + Buffer.byteLength(twoValues), 'only the phone and the custom fields are sealed');
  t.same(openEvent(where, stored, key), withPhone, 'opens to what was said');
  t.same(
    openEvent(where, stored, null),
    said,
    'without the key: the empty values as they were, the sealed ones erased',
  );
});

t.test('data keys: stored wrapped in one format, never in the clear; another master key opens nothing', async (t) => {
  const keys = PersonalDataKeys.of(box);
  const { key, stored } = keys.newKey();
  t.match(stored, /^v2:/, 'the row stores the key wrapped with the person-key box');
  t.equal(key.symmetricKeySize, 32);
  t.notMatch(
    stored,
    new RegExp(key.export().toString('base64').slice(0, 16).replace(/[+/]/g, '.')),
    'not the key itself',
  );
  const fresh = PersonalDataKeys.of(box);
  t.ok(fresh.keyOf(stored).equals(key), 'another process unwraps the same key');
  t.equal(fresh.cached, 1);
  t.ok(fresh.keyOf(stored).equals(key), 'from its cache the second time');
  const otherBox = new SecretBox(Buffer.alloc(32, 1));
  const other = PersonalDataKeys.of(otherBox);
  t.throws(() => other.keyOf(stored), 'another SECRET_ENCRYPTION_KEY opens no key');
  t.throws(() => keys.keyOf('s2:' + randomBytes(12).toString('base64')), 'a derived format is no longer read');
  const made = Array.from({ length: 200 }, () => keys.newKey());
  t.equal(new Set([stored, ...made.map((m) => m.stored)]).size, 201, 'every row is its own');
  t.equal(new Set(made.map((m) => m.key.export().toString('hex'))).size, 200, 'and every key');
  t.ok(
    made.every((m) => fresh.keyOf(m.stored).equals(m.key)),
    'each unwrapped again gives the key handed out',
  );
});

t.test(
  'values of the derived formats (s1:, s2:) become their keys wrapped; the one format stays as it is',
  async (t) => {
    const keys = PersonalDataKeys.of(box);
    const seed = randomBytes(16);
    const nonce = randomBytes(12);
    const s1 = keys.inOneFormat('s1:' + seed.toString('base64'));
    const s2 = keys.inOneFormat('s2:' + nonce.toString('base64'));
    t.match(s1, /^v2:/);
    t.same(keys.keyOf(s1).export(), box.personKeySeeds.derive(seed), 'the seed’s key, wrapped');
    t.same(keys.keyOf(s2).export(), box.personKeyNonces.derive(nonce), 'the nonce’s key, wrapped');
    const { stored } = keys.newKey();
    t.equal(keys.inOneFormat(stored), stored, 'a wrapped key is left as it is');
    t.throws(
      () => keys.inOneFormat('s1:' + Buffer.alloc(8).toString('base64')),
      'a seed of the wrong length is refused',
    );
    t.throws(() => keys.inOneFormat('s2:' + Buffer.alloc(8).toString('base64')), 'a nonce of the wrong length too');
  },
);

t.test("the nonce derivation is RFC 8452's: its AES-256 message-encryption key (Appendix C.2)", async (t) => {
  // The RFC's key-generating key and nonce (the service's key-generating key is the person-key-nonce purpose key).
  const kdf = new NonceKeyDerivation(Buffer.from('01'.padEnd(64, '0'), 'hex'));
  t.equal(
    kdf.derive(Buffer.from('030000000000000000000000', 'hex')).toString('hex'),
    'b914f4742be9e1d7a2f84addbf96dec3456e3c6c05ecc157cdbf0700fedad222',
  );
  const nonces = [randomBytes(12), randomBytes(12), randomBytes(12)];
  t.same(
    kdf.deriveAll(nonces),
    nonces.map((n) => kdf.derive(n)),
    'a batch gives each nonce the key it gets alone',
  );
  t.throws(() => kdf.derive(randomBytes(16)), 'a nonce is 12 bytes');
});

t.test('data keys wrapped before seeds (v2:) still open, and only with their master key and purpose', async (t) => {
  // How rows written by the earlier version hold their key: 32 random bytes sealed with the person-key box.
  const key = randomBytes(32);
  const wrapped = box.personKeys.seal(key.toString('base64'));
  t.ok(wrapped.startsWith('v2:'));
  const keys = PersonalDataKeys.of(box);
  t.same(keys.keyOf(wrapped).export(), key, 'unwrapped with the person-key purpose');
  const otherBox = new SecretBox(Buffer.alloc(32, 1));
  t.throws(() => PersonalDataKeys.of(otherBox).keyOf(wrapped), 'another master key cannot');
  t.throws(() => box.webhookSecrets.open(wrapped), 'nor another purpose');
});

t.test('the random pool hands out distinct bytes across refills, never the same twice', async (t) => {
  const seen = new Set<string>();
  // 2,000 draws of 12 bytes cross the 8 KiB pool's refill twice.
  for (let i = 0; i < 2000; i++) seen.add(randomFromPool(12).toString('hex'));
  t.equal(seen.size, 2000, 'every draw differs');
  t.notOk(seen.has('00'.repeat(12)), 'no draw is the zeroed part of the pool');
  t.throws(() => randomFromPool(9000), 'more than the pool at once is refused');
});
