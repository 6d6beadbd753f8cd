import t from 'tap';
import { Type } from 'typebox';
import { toLeadEvent } from '../../src/domain/leads/events.js';
import { fold, recordReader } from '../../src/domain/leads/evolve.js';
import { LEAD_FIELD_DEFAULTS, LEAD_FIELDS, SINCE_FIRST, type Lead } from '../../src/domain/leads/lead.js';
import { reserialiseLeadRows, type LeadCodec } from '../../src/projections/lead-rows.js';
import { LeadSchema } from '../../src/schemas/lead.js';
import { leadSerialiser } from '../../src/schemas/lead-json.js';
import { parseJsonText } from '../../src/shared/json-text.js';
import { migrations } from '../../src/storage/migrations/index.js';
import { leadBody, leadsFixture } from '../leads/helpers.js';

// A field added to the Lead reaches the rows stored before it by one path: its default for older payloads
// (LEAD_FIELD_DEFAULTS, read by leadFromPayload) and a migration that writes every stored body again through the one
// serialiser (reserialiseLeadRows). Acted out here with a second version of the Lead: today's with a made-up field
// added (a list, as most added fields are), whose name no Lead field has.

const ADDED = 'field_added_by_the_test';
type LeadV2 = Lead & { [ADDED]: string[] };
const schemaV2 = Type.Object(
  { ...LeadSchema.properties, [ADDED]: Type.Array(Type.String()) },
  { additionalProperties: false },
);
const defaultsV2 = { ...LEAD_FIELD_DEFAULTS, [ADDED]: [] as string[] };
const readV2 = recordReader<LeadV2>(defaultsV2);
const v2: LeadCodec = { read: readV2, json: leadSerialiser(schemaV2) as LeadCodec['json'] };

t.test('the last migration that re-serialises the lead bodies lists the Lead’s current fields', async (t) => {
  const last = migrations.filter((m) => m.leadFields).sort((a, b) => b.version - a.version)[0];
  t.ok(last, 'a migration re-serialises the stored lead bodies');
  t.same(
    last?.leadFields,
    LEAD_FIELDS,
    'a field added to the Lead needs a migration whose run is reserialiseLeadRows and whose leadFields name it',
  );
});

t.test('an event written before a field evolves to the field’s default; one that has it keeps its value', async (t) => {
  const payload = { id: 'x', full_name: 'A', changed_fields: ['full_name'] } as unknown as Record<string, unknown>;
  const a = readV2(payload);
  const b = readV2(payload);
  t.notOk((LEAD_FIELDS as readonly string[]).includes(ADDED), 'the made-up field is none of the Lead’s');
  t.same(a[ADDED], [], 'the default');
  t.not(a[ADDED], b[ADDED], 'each lead its own copy of the default');
  t.same(readV2({ ...payload, [ADDED]: ['ielts'] })[ADDED], ['ielts'], 'a value the payload carries');
  t.notOk('changed_fields' in a, 'only the Lead’s fields');
  t.same(Object.keys(a), [...LEAD_FIELDS, ADDED], 'in the order of the defaults');
  // The first stored bodies' fields have no default (every lead event carries them); each field added since has one.
  const first = migrations.filter((m) => m.leadFields).sort((x, y) => x.version - y.version)[0]?.leadFields;
  t.same(
    Object.entries(LEAD_FIELD_DEFAULTS)
      .filter(([, d]) => d === SINCE_FIRST)
      .map(([field]) => field),
    first,
    'the fields without a default are exactly those of the first re-serialised bodies',
  );
});

t.test('a field added to the Lead reaches the rows stored before it', async (t) => {
  const f = await leadsFixture(t);
  const ids: string[] = [];
  for (const key of [f.live, f.live, f.test]) {
    const created = await f.post(leadBody({ custom_fields: {} }), { key });
    t.equal(created.status, 201);
    ids.push(String(created.body.id));
  }
  const patched = await f.patch(ids[0]!, { temperature: 'hot', note: 'Called back' });
  t.equal(patched.status, 200);

  const stored = async () =>
    new Map(
      (await f.pool.query<{ id: string; text: string }>('SELECT id, body::text AS text FROM leads')).rows.map((r) => [
        r.id,
        r.text,
      ]),
    );
  const before = await stored();
  t.equal(before.size, 3);
  const read = await f.get(`/v1/leads/${ids[0]}`);
  t.notOk(ADDED in read.body, 'the rows as stored predate the field');

  const first = await reserialiseLeadRows(f.pool, v2, 2);
  t.same(first, { rows: 3, rewritten: 3 }, 'every row written again, two to a page');
  const after = await stored();
  for (const id of ids) {
    const body = parseJsonText(after.get(id)!) as Record<string, unknown>;
    t.same(Object.keys(body), [...LEAD_FIELDS, ADDED], 'the new field in the schema’s place');
    t.same(body[ADDED], [], 'with its default');
    const { [ADDED]: _, ...rest } = body;
    t.same(rest, parseJsonText(before.get(id)!), 'every other field as it was');
    // The rows now say what a fold of each lead's log under the second version says.
    const events = await f.services.store.readStream(`lead-${id}`);
    t.equal(after.get(id), v2.json(v2.read(fold(events.map(toLeadEvent))! as never)), 'as the log folds under v2');
  }
  const served = await f.get(`/v1/leads/${ids[0]}`);
  t.same(served.body[ADDED], [], 'the API answers the stored text with the field');
  t.equal(served.body.temperature, 'hot');

  t.same(await reserialiseLeadRows(f.pool, v2), { rows: 3, rewritten: 0 }, 'a second run changes nothing');
});
