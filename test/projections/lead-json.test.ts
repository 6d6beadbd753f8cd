import fc from 'fast-check';
import t from 'tap';
import { LEAD_FIELDS, type Lead } from '../../src/domain/leads/lead.js';
import { leadJson } from '../../src/schemas/lead-json.js';
import { parseJsonText } from '../../src/shared/json-text.js';
import { checkProperty } from '../support/properties.js';

// leadJson, the one serialiser of a Lead: the spec's fields in the spec's order, and the same bytes whatever order a
// lead's objects came in (said live, or read back from jsonb by a rebuild or an import).

const base: Lead = {
  id: '0190f5c2-1111-7000-8000-000000000001',
  full_name: 'Asha “A” Rao',
  phone: '+919800000001',
  alt_phone: null,
  email: 'asha@example.org',
  city: 'Pune',
  state: null,
  country_interest: 'CA',
  visa_type: 'student',
  intake: '2027-09',
  course: null,
  date_of_birth: null,
  highest_qualification: 'bachelors',
  score_percent: 72.5,
  english_test: { type: 'IELTS', overall: 7, listening: 7.5, reading: 6.5 },
  work_experience_years: 2,
  passport_available: true,
  previous_refusals: 0,
  source: { key: 'api', name: 'API' },
  campaign: null,
  utm: { source: 'google', medium: 'cpc' },
  landing_page_url: null,
  branch: { id: '0190f5c2-1111-7000-8000-000000000002', code: 'PUN' },
  owner: { id: '0190f5c2-1111-7000-8000-000000000003', name: 'Vikram', email: 'vikram@example.org' },
  stage: { key: 'new', name: 'New' },
  temperature: 'warm',
  score: 40,
  next_follow_up_at: null,
  lost_reason: null,
  converted: false,
  custom_fields: { preferred_callback: 'evening', budget_lakhs: 12, has_offer_letter: true },
  consent: { at: '2026-11-28T10:00:00.000Z', source: 'api' },
  created_at: '2026-11-28T10:00:00.000Z',
  updated_at: '2026-11-28T10:05:00.000Z',
  last_activity_at: '2026-11-28T10:05:00.000Z',
  stage_changed_at: null,
};

/** The same value with every object's keys in another order. */
function reordered(value: unknown, order: (keys: string[]) => string[]): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => reordered(v, order));
  const out: Record<string, unknown> = {};
  for (const key of order(Object.keys(value))) out[key] = reordered((value as Record<string, unknown>)[key], order);
  return out;
}

t.test('every field in the spec order, and the value it holds', async (t) => {
  const text = leadJson(base);
  t.same(Object.keys(parseJsonText(text) as object), LEAD_FIELDS, 'the spec fields, in order');
  t.same(parseJsonText(text), base, 'the same values');
});

t.test('the same bytes whatever order the objects came in', async (t) => {
  const expected = leadJson(base);
  await checkProperty(
    t,
    'leadJson ignores key order',
    fc.property(fc.array(fc.nat(), { minLength: 40, maxLength: 40 }), (weights) => {
      // A permutation of each object's keys, from the drawn weights.
      const order = (keys: string[]) =>
        keys
          .map((k, i) => ({ k, w: weights[(i * 7 + k.length) % weights.length]! }))
          .sort((a, b) => a.w - b.w)
          .map((x) => x.k);
      return leadJson(reordered(base, order) as Lead) === expected;
    }),
    200,
  );
});

t.test('a lead from a log older than one of its fields is written without it, not refused', async (t) => {
  const older = { ...base } as Partial<Lead>;
  delete older.stage_changed_at;
  const text = leadJson(older as Lead);
  t.notOk('stage_changed_at' in (parseJsonText(text) as object), 'the missing field stays missing');
  t.equal(text, leadJson(reordered(older, (k) => [...k].reverse()) as Lead), 'in one order too');
});
