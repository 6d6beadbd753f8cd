import { canonicalJson } from '../../src/events/canonical-json.js';
import fc from 'fast-check';
import t from 'tap';
import { textProblem } from '../../src/http/edge-values.js';
import { appFixture } from '../applications/support.js';
import { leadsFixture, type LeadsFixture } from '../leads/helpers.js';
import { dateTimeParts, expectedInstant, renderDateTime } from '../support/date-times.js';
import { badText, checkProperty, goodText } from '../support/properties.js';
import { rawRequest } from '../support/raw-http.js';

// The demo workspace's custom fields (a dropdown, a number, a checkbox) and a text and a date field.
const CUSTOM_FIELDS = [
  {
    key: 'preferred_callback',
    label: 'Preferred callback time',
    type: 'dropdown' as const,
    options: [
      { value: 'morning', label: 'Morning' },
      { value: 'evening', label: 'Evening' },
    ],
  },
  { key: 'budget_lakhs', label: 'Budget', type: 'number' as const },
  { key: 'has_offer_letter', label: 'Offer letter', type: 'checkbox' as const },
  { key: 'notes_text', label: 'Notes', type: 'text' as const },
  { key: 'visit_date', label: 'Visit date', type: 'date' as const },
];

const HIGH = { capacity: 100_000, refill_per_second: 10_000 };

function fixture(t: Parameters<typeof leadsFixture>[0]): Promise<LeadsFixture> {
  return leadsFixture(t, {
    config: { webhookAllowLoopback: true },
    definition: {
      custom_fields: CUSTOM_FIELDS,
      limits: {
        rate: {
          key: HIGH,
          scopes: { 'leads:create': HIGH, 'leads:read': HIGH, 'leads:update': HIGH, 'webhooks:manage': HIGH },
        },
      },
    },
  });
}

let serial = 0;
const email = () => `edge.${process.pid}.${++serial}@example.com`;

interface Answer {
  status: number;
  body: Record<string, unknown>;
  text: string;
}

async function send(
  f: LeadsFixture,
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await f.request(path, {
    method,
    key: f.live,
    body,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, text };
}

/** JSON text of a value in which the strings `"<inf>"` and `"<-inf>"` stand for numbers JSON reads as infinite. */
function jsonWithInfinities(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v === Infinity ? '<inf>' : v === -Infinity ? '<-inf>' : v,
  ).replace(/"<(-?)inf>"/g, (_m, sign: string) => `${sign}1e309`);
}

/** The answer is 400 validation_failed naming exactly `names` (and nothing else), with names safe to show. */
function assertRefused(answer: Answer, names: string[], what: string): void {
  if (answer.status !== 400 || answer.body.error !== 'validation_failed')
    throw new Error(`${what}: expected 400 validation_failed, got ${answer.status} ${answer.text}`);
  const fields = Object.keys((answer.body.fields as Record<string, string>) ?? {});
  if (JSON.stringify([...fields].sort()) !== JSON.stringify([...new Set(names)].sort()))
    throw new Error(`${what}: expected fields ${JSON.stringify(names)}, got ${JSON.stringify(fields)}`);
  for (const name of fields) if (textProblem(name)) throw new Error(`${what}: field name ${JSON.stringify(name)}`);
}

const countLeads = async (f: LeadsFixture) =>
  Number((await f.pool.query<{ n: string }>('SELECT count(*) AS n FROM leads')).rows[0]!.n);

async function newLead(f: LeadsFixture): Promise<string> {
  const answer = await send(f, 'POST', '/v1/leads', JSON.stringify({ full_name: 'A', email: email(), consent: true }));
  if (answer.status !== 201) throw new Error(`create: ${answer.text}`);
  return String(answer.body.id);
}

t.test('NULs and unpaired surrogates in any string or key: 400 naming the field, nothing stored', async (t) => {
  const f = await fixture(t);
  const before = await countLeads(f);
  const base = () => ({ full_name: 'Asha', email: email(), consent: true });
  for (const bad of ['\u0000', '\uD800', '\uDFFF']) {
    const shown = `\\u${bad.charCodeAt(0).toString(16).padStart(4, '0')}`;
    const cases: [string, Record<string, unknown>][] = [
      ['full_name', { full_name: `As${bad}ha` }],
      ['phone', { phone: `98${bad}76543210` }],
      ['email', { email: `a${bad}@example.com` }],
      ['alt_phone', { alt_phone: bad }],
      ['city', { city: `Pune${bad}` }],
      ['state', { state: bad }],
      ['country_interest', { country_interest: `C${bad}` }],
      ['visa_type', { visa_type: `student${bad}` }],
      ['intake', { intake: `2027-0${bad}` }],
      ['course', { course: `MBA ${bad}` }],
      ['date_of_birth', { date_of_birth: `1990-01-0${bad}` }],
      ['message', { message: `Hello${bad}` }],
      ['landing_page_url', { landing_page_url: `https://example.com/${bad}` }],
      ['captcha_token', { captcha_token: bad }],
      ['website', { website: bad }],
      ['utm.source', { utm: { source: `news${bad}letter` } }],
      [`utm.so${shown}urce`, { utm: { [`so${bad}urce`]: 'x' } }],
      ['english_test.type', { english_test: { type: `IELTS${bad}`, overall: 7 } }],
      ['english_test.test_date', { english_test: { type: 'IELTS', overall: 7, test_date: `2024-01-0${bad}` } }],
      ['custom_fields.notes_text', { custom_fields: { notes_text: `call ${bad}` } }],
      ['custom_fields.preferred_callback', { custom_fields: { preferred_callback: `morning${bad}` } }],
      [`custom_fields.no${shown}tes`, { custom_fields: { [`no${bad}tes`]: 'x' } }],
      ['custom_fields.notes_text.deep.1', { custom_fields: { notes_text: { deep: ['fine', `x${bad}`] } } }],
      [`x${shown}`, { [`x${bad}`]: 1 }],
    ];
    for (const [name, change] of cases) {
      const answer = await send(f, 'POST', '/v1/leads', JSON.stringify({ ...base(), ...change }));
      assertRefused(answer, [name], `POST /v1/leads ${name} ${shown}`);
      t.pass(`POST /v1/leads: ${name} with ${shown} → 400 naming ${name}`);
    }
  }
  t.equal(await countLeads(f), before, 'no lead was stored');

  // Names holding a line break are named too (the Error body's serialiser once dropped them, leaving `fields` empty).
  for (const [name, change] of [
    ['custom_fields.line\nbreak', { custom_fields: { 'line\nbreak': 'x' } }],
    ['utm.line\u2028break', { utm: { 'line\u2028break': 'x' } }],
    ['custom_fields.a\\u0000\r', { custom_fields: { 'a\u0000\r': 'x' } }],
  ] as const) {
    assertRefused(await send(f, 'POST', '/v1/leads', JSON.stringify({ ...base(), ...change })), [name], name);
    t.pass(`POST /v1/leads: ${JSON.stringify(name).replace(/\u2028/g, '\\u2028')} is named`);
  }

  const id = await newLead(f);
  const lead = (await send(f, 'GET', `/v1/leads/${id}`)).text;
  for (const [name, change] of [
    ['note', { note: 'Called \u0000 back' }],
    ['stage_key', { stage_key: 'contacted\uD800' }],
    ['lost_reason_key', { lost_reason_key: '\u0000' }],
    ['temperature', { temperature: 'hot\uDC00' }],
    ['next_follow_up_at', { next_follow_up_at: '2027-01-01T00:00:00Z\u0000' }],
    ['owner_email', { owner_email: 'vikram@northstar.example\u0000' }],
    ['custom_fields.notes_text', { custom_fields: { notes_text: 'a\uDBFF' } }],
    ['custom_fields.ke\\u0000y', { custom_fields: { 'ke\u0000y': null } }],
    ['custom_fields.notes_text.a.b', { custom_fields: { notes_text: { a: { b: '\u0000' } } } }],
  ] as const) {
    assertRefused(await send(f, 'PATCH', `/v1/leads/${id}`, JSON.stringify(change)), [name], `PATCH ${name}`);
    t.pass(`PATCH /v1/leads/{id}: ${name} → 400 naming it`);
  }
  t.equal((await send(f, 'GET', `/v1/leads/${id}`)).text, lead, 'the lead is unchanged');

  for (const [name, change] of [
    ['description', { description: 'CRM \u0000 sync' }],
    ['description', { description: '\uD83D' }],
    ['url', { url: 'https://127.0.0.1/hook\u0000' }],
    ['url', { url: 'https://127.0.0.1/\uDE00' }],
    ['events.0', { events: ['lead.created\u0000'] }],
  ] as const) {
    const body = { url: 'https://127.0.0.1/hook', events: ['lead.created'], ...change };
    assertRefused(await send(f, 'POST', '/v1/webhooks', JSON.stringify(body)), [name], `POST /v1/webhooks ${name}`);
    t.pass(`POST /v1/webhooks: ${name} → 400 naming it`);
  }
  t.same((await send(f, 'GET', '/v1/webhooks')).body, { data: [] }, 'no endpoint was stored');

  for (const [query, name] of [
    ['cursor=a%00b', 'cursor'],
    ['updated_since=%ED%A0%80', 'updated_since'],
  ] as const) {
    const answer = await send(f, 'GET', `/v1/leads?${query}`);
    t.equal(answer.status, 400, `GET /v1/leads?${query}`);
    t.ok((answer.body.fields as Record<string, string>)[name], `names ${name}`);
  }

  // A NUL cannot travel in a header through fetch: the bytes go over a socket as a client could send them.
  const port = Number(new URL(f.baseUrl).port);
  const body = JSON.stringify({ full_name: 'A', email: email(), consent: true });
  for (const value of ['abc\u0000def', 'abc\u0001def']) {
    const raw = await rawRequest(
      port,
      `POST /v1/leads HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${f.live}\r\n` +
        `Idempotency-Key: ${value}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    t.equal(raw.status, 400, 'a control character in Idempotency-Key: 400');
    const json = JSON.parse(raw.body) as Record<string, unknown>;
    t.match(json, { error: 'validation_failed', fields: { 'idempotency-key': /control character/ } });
    t.match(json.request_id, /^req_[0-9a-f]{24}$/);
    t.equal(json.request_id, raw.headers['request-id']);
  }
  const latin1 = await rawRequest(
    port,
    Buffer.concat([
      Buffer.from(
        `POST /v1/leads HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${f.live}\r\nIdempotency-Key: a`,
      ),
      Buffer.from([0xed, 0xa0, 0x80]),
      Buffer.from(
        `\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      ),
    ]),
  );
  t.match(
    JSON.parse(latin1.body),
    { error: 'validation_failed', fields: { 'idempotency-key': String } },
    'the UTF-8 bytes of a surrogate in Idempotency-Key: 400 naming it',
  );
  t.equal(await countLeads(f), before + 1, 'nothing but the one valid lead was stored');
});

t.test('numbers JSON reads as infinite: 400 naming the field; finite extremes kept exactly', async (t) => {
  const f = await fixture(t);
  const before = await countLeads(f);
  const lead = (extra: Record<string, unknown>) => ({ full_name: 'Asha', email: email(), consent: true, ...extra });
  for (const [name, body] of [
    ['english_test.overall', lead({ english_test: { type: 'IELTS', overall: Infinity } })],
    ['english_test.listening', lead({ english_test: { type: 'IELTS', overall: 7, listening: -Infinity } })],
    ['score_percent', lead({ score_percent: Infinity })],
    ['work_experience_years', lead({ work_experience_years: -Infinity })],
    ['previous_refusals', lead({ previous_refusals: Infinity })],
    ['custom_fields.budget_lakhs', lead({ custom_fields: { budget_lakhs: Infinity } })],
    ['custom_fields.notes_text.0', lead({ custom_fields: { notes_text: [-Infinity] } })],
  ] as const) {
    assertRefused(await send(f, 'POST', '/v1/leads', jsonWithInfinities(body)), [name], name);
    t.pass(`POST /v1/leads: 1e309 in ${name} → 400 naming it`);
  }
  t.equal(await countLeads(f), before, 'nothing stored');
  const id = await newLead(f);
  assertRefused(
    await send(f, 'PATCH', `/v1/leads/${id}`, jsonWithInfinities({ custom_fields: { budget_lakhs: -Infinity } })),
    ['custom_fields.budget_lakhs'],
    'PATCH',
  );
  t.pass('PATCH /v1/leads/{id}: -1e309 in custom_fields.budget_lakhs → 400 naming it');

  const text =
    `{"full_name":"Asha","email":"${email()}","consent":true,"score_percent":99.99999999999999,` +
    '"english_test":{"type":"IELTS","overall":1.7976931348623157e308,"listening":5e-324,"reading":-0,' +
    '"writing":1E2,"speaking":0.30000000000000004},"custom_fields":{"budget_lakhs":-1.5e-300}}';
  const created = await send(f, 'POST', '/v1/leads', text);
  t.equal(created.status, 201, 'finite extremes are accepted');
  const sent = JSON.parse(text) as Record<string, unknown>;
  const got = (await send(f, 'GET', `/v1/leads/${String(created.body.id)}`)).body;
  t.same(got.english_test, sent.english_test, 'english_test read back exactly');
  t.equal(got.score_percent, sent.score_percent);
  t.same(got.custom_fields, sent.custom_fields);
  const listed = (await send(f, 'GET', '/v1/leads?limit=100')).body.data as Record<string, unknown>[];
  t.same(
    listed.find((l) => l.id === created.body.id),
    got,
    'the list shows the same lead as GET',
  );
});

t.test('path ids: non-canonical uuid forms are 404; upper case names the same resource', async (t) => {
  const f = await fixture(t);
  const id = await newLead(f);
  const upper = id.toUpperCase();
  for (const form of [`urn:uuid:${id}`, `%7B${id}%7D`, id.replace(/-/g, ''), `${id}%20`, `%20${id}`, `${id}%00`]) {
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', '{"note":"x"}'],
    ] as const) {
      const answer = await send(f, method, `/v1/leads/${form}`, body);
      t.match([answer.status, answer.body.error], [404, 'not_found'], `${method} /v1/leads/${form}: 404`);
    }
    const gone = await send(f, 'DELETE', `/v1/webhooks/${form.replace(id, '01234567-89ab-4cde-8f01-23456789abcd')}`);
    t.match([gone.status, gone.body.error], [404, 'not_found'], `DELETE /v1/webhooks/${form}: 404`);
  }

  const read = await send(f, 'GET', `/v1/leads/${upper}`);
  t.equal(read.status, 200, 'GET with the upper-case id reads the lead');
  t.equal(read.body.id, id, 'and shows its id in lower case');
  const patched = await send(f, 'PATCH', `/v1/leads/${upper}`, JSON.stringify({ temperature: 'hot', note: 'Called' }));
  t.equal(patched.status, 200, 'PATCH with the upper-case id');
  t.equal(patched.body.temperature, 'hot');
  const streams = await f.pool.query<{ stream_id: string; n: string }>(
    'SELECT stream_id, count(*) AS n FROM events WHERE lower(stream_id) = $1 GROUP BY stream_id',
    [`lead-${id}`],
  );
  t.same(
    streams.rows.map((r) => [r.stream_id, Number(r.n)]),
    [[`lead-${id}`, 3]],
    "the change went to the lead's own stream (created, updated, note), not a second one",
  );
  t.equal((await send(f, 'PATCH', `/v1/leads/${id}`, '{"temperature":"cold"}')).status, 200, 'PATCH again, lower case');

  const created = await send(
    f,
    'POST',
    '/v1/webhooks',
    JSON.stringify({ url: 'https://127.0.0.1/hook', events: ['lead.created'] }),
  );
  t.equal(created.status, 201);
  const endpoint = String(created.body.id);
  t.equal((await send(f, 'DELETE', `/v1/webhooks/${endpoint.toUpperCase()}`, undefined)).status, 204);
  t.same((await send(f, 'GET', '/v1/webhooks')).body, { data: [] }, 'DELETE with the upper-case id deleted it');

  const apps = await appFixture(t, { plan: 'enterprise' });
  const application = await apps.convert(await apps.lead());
  const status = await apps.app.request(`/v1/applications/${application.id.toUpperCase()}/status`, {
    key: apps.ws.live,
  });
  t.equal(status.status, 200, 'GET /v1/applications/{ID}/status with the upper-case id');
  t.equal(((await status.json()) as { id: string }).id, application.id);
  for (const form of [`urn:uuid:${application.id}`, `%7B${application.id}%7D`]) {
    const answer = await apps.app.request(`/v1/applications/${form}/status`, { key: apps.ws.live });
    t.equal(answer.status, 404, `GET /v1/applications/${form}/status: 404`);
  }
  const held = await apps.admin(`/applications/${application.id.toUpperCase()}/status`, {
    method: 'POST',
    json: { status: 'on_hold' },
  });
  t.equal(held.status, 200, 'an admin change with the upper-case id');
  const appStreams = await apps.app.pool.query<{ stream_id: string }>(
    'SELECT DISTINCT stream_id FROM events WHERE lower(stream_id) = $1',
    [`application-${application.id}`],
  );
  t.same(
    appStreams.rows.map((r) => r.stream_id),
    [`application-${application.id}`],
    "it went to the application's own stream",
  );
});

t.test(
  'date-times PostgreSQL or JavaScript cannot hold: 400 naming the field; the edges are kept exactly',
  async (t) => {
    const f = await fixture(t);
    const id = await newLead(f);
    const refused = [
      '0000-01-01T00:00:00Z',
      '2024-12-31T23:59:60Z',
      '2016-12-31T23:59:60+00:00',
      '9999-12-31T23:59:59-23:59',
      '0001-01-01T00:00:00+00:01',
      '2024-01-01T00:00:00+05',
      '2024-01-01T00:00:00.0001Z',
      '2024-01-01T24:00:00Z',
      '2023-02-29T00:00:00Z',
    ];
    for (const value of refused) {
      const list = await send(f, 'GET', `/v1/leads?updated_since=${encodeURIComponent(value)}`);
      assertRefused(list, ['updated_since'], `updated_since=${value}`);
      const patch = await send(f, 'PATCH', `/v1/leads/${id}`, JSON.stringify({ next_follow_up_at: value }));
      assertRefused(patch, ['next_follow_up_at'], `next_follow_up_at ${value}`);
      t.pass(`${value}: 400 naming updated_since and next_follow_up_at`);
    }
    for (const [value, stored] of [
      ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
      ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
      ['9999-12-31T23:59:59+23:59', '9999-12-31T00:00:59.000Z'],
      ['0099-06-01 12:00:00z', '0099-06-01T12:00:00.000Z'],
      ['2026-11-01T10:00:00.250000+05:30', '2026-11-01T04:30:00.250Z'],
    ] as const) {
      const patch = await send(f, 'PATCH', `/v1/leads/${id}`, JSON.stringify({ next_follow_up_at: value }));
      t.equal(patch.status, 200, `next_follow_up_at ${value} accepted`);
      t.equal(patch.body.next_follow_up_at, stored, `stored as ${stored}`);
      t.equal((await send(f, 'GET', `/v1/leads/${id}`)).body.next_follow_up_at, stored, 'and read back so');
      const list = await send(f, 'GET', `/v1/leads?updated_since=${encodeURIComponent(value)}`);
      t.equal(list.status, 200, `updated_since=${value} accepted`);
    }
    const early = await send(f, 'GET', `/v1/leads?updated_since=${encodeURIComponent('0099-06-01 12:00:00Z')}`);
    t.equal((early.body.data as unknown[]).length, 1, 'a space-separated year 0099 is year 99, not 1999');
    const late = await send(f, 'GET', `/v1/leads?updated_since=${encodeURIComponent('9999-12-31T23:59:59.999Z')}`);
    t.same(late.body.data, [], 'nothing was updated in 9999');

    for (const [name, change] of [
      ['date_of_birth', { date_of_birth: '0000-01-01' }],
      ['english_test.test_date', { english_test: { type: 'IELTS', overall: 7, test_date: '0000-02-29' } }],
      ['custom_fields.visit_date', { custom_fields: { visit_date: '0000-01-01' } }],
    ] as const) {
      const body = JSON.stringify({ full_name: 'A', email: email(), consent: true, ...change });
      assertRefused(await send(f, 'POST', '/v1/leads', body), [name], name);
      t.pass(`${name} 0000: 400 naming it`);
    }
  },
);

// Fields a property run may set on a lead, each with a storable or an unstorable value, and what a read-back shows.
interface Probe {
  /** Field names the answer must give, when the value cannot be stored. */
  refusedAs: string[];
  apply(body: Record<string, unknown>): void;
  /** Checks the stored lead (only when no probe of the run is refused). */
  check?(lead: Record<string, unknown>): string | undefined;
}

const text = (max: number) =>
  fc.oneof(
    { weight: 3, arbitrary: goodText(max).map((value) => ({ value, bad: false })) },
    { weight: 1, arbitrary: badText(max).map((value) => ({ value, bad: true })) },
  );
const number = (min: number, max: number) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.double({ min, max, noNaN: true }).map((value) => ({ value, bad: false })) },
    { weight: 1, arbitrary: fc.constantFrom(Infinity, -Infinity).map((value) => ({ value, bad: true })) },
  );
const trimmed = (value: string) => (value.trim() === '' ? null : value.trim());
// Values exactly; an object's keys in any order (the stored Lead writes free-form objects' keys in one order, so a
// lead rebuilt from the log reads the same bytes as the lead written live).
const sameJson = (a: unknown, b: unknown) => canonicalJson(a) === canonicalJson(b);
const mismatch = (name: string, got: unknown, want: unknown) =>
  sameJson(got, want) ? undefined : `${name}: stored ${JSON.stringify(got)}, sent ${JSON.stringify(want)}`;

function stringProbe(name: 'city' | 'state' | 'course', max: number): fc.Arbitrary<Probe> {
  return text(max).map(({ value, bad }) => ({
    refusedAs: bad ? [name] : [],
    apply: (body) => (body[name] = value),
    check: (lead) => mismatch(name, lead[name], trimmed(value)),
  }));
}

const leadProbes: fc.Arbitrary<Probe>[] = [
  text(100).map(({ value, bad }) => ({
    refusedAs: bad ? ['full_name'] : [],
    apply: (body) => (body.full_name = `N${value}N`),
    check: (lead) => mismatch('full_name', lead.full_name, `N${value}N`.trim()),
  })),
  stringProbe('city', 120),
  stringProbe('state', 120),
  stringProbe('course', 200),
  text(2000).map(({ value, bad }) => ({ refusedAs: bad ? ['message'] : [], apply: (body) => (body.message = value) })),
  fc.record({ source: text(200), campaign: text(200), badKey: fc.option(badText(10)) }).map((utm) => ({
    refusedAs: [
      ...(utm.source.bad ? ['utm.source'] : []),
      ...(utm.campaign.bad ? ['utm.campaign'] : []),
      ...(utm.badKey === null ? [] : [`utm.${utm.badKey}`]),
    ],
    apply: (body) =>
      (body.utm = {
        source: utm.source.value,
        campaign: utm.campaign.value,
        ...(utm.badKey === null ? {} : { [utm.badKey]: 'x' }),
      }),
    check: (lead) => {
      const kept = Object.entries({ source: utm.source.value, campaign: utm.campaign.value })
        .filter(([, v]) => v.trim() !== '')
        .map(([k, v]) => [k, v.trim()]);
      const want = kept.length ? Object.fromEntries(kept) : null;
      return mismatch('utm', lead.utm, want) ?? mismatch('campaign', lead.campaign, want?.campaign ?? null);
    },
  })),
  fc
    .record({ overall: number(-1e308, 1e308), listening: number(0, 9), speaking: number(-1e-300, 1e-300) })
    .map((scores) => ({
      refusedAs: Object.entries(scores)
        .filter(([, s]) => s.bad)
        .map(([k]) => `english_test.${k}`),
      apply: (body) =>
        (body.english_test = {
          type: 'PTE',
          ...Object.fromEntries(Object.entries(scores).map(([k, s]) => [k, s.value])),
        }),
      check: (lead) =>
        mismatch('english_test', lead.english_test, {
          type: 'PTE',
          ...Object.fromEntries(Object.entries(scores).map(([k, s]) => [k, s.value])),
        }),
    })),
  number(0, 100).map(({ value, bad }) => ({
    refusedAs: bad ? ['score_percent'] : [],
    apply: (body) => (body.score_percent = value),
    check: (lead) => mismatch('score_percent', lead.score_percent, value),
  })),
  fc.oneof(
    fc
      .record({ notes: text(2000), budget: number(-1e308, 1e308), key: fc.option(badText(10)) })
      .map(({ notes, budget, key }): Probe => ({
        refusedAs: [
          ...(notes.bad ? ['custom_fields.notes_text'] : []),
          ...(budget.bad ? ['custom_fields.budget_lakhs'] : []),
          ...(key === null ? [] : [`custom_fields.${key}`]),
        ],
        apply: (body) =>
          (body.custom_fields = {
            notes_text: notes.value,
            budget_lakhs: budget.value,
            ...(key === null ? {} : { [key]: 'x' }),
          }),
        check: (lead) =>
          mismatch('custom_fields', lead.custom_fields, { notes_text: notes.value, budget_lakhs: budget.value }),
      })),
    fc.array(text(30), { minLength: 1, maxLength: 3 }).map((items): Probe => ({
      // A list is never a text field's value: refused either way, at the unstorable items or at the field.
      refusedAs: items.some((i) => i.bad)
        ? items.flatMap((item, i) => (item.bad ? [`custom_fields.notes_text.${i}`] : []))
        : ['custom_fields.notes_text'],
      apply: (body) => (body.custom_fields = { notes_text: items.map((i) => i.value) }),
    })),
  ),
];

/** A key as the answer names it: each NUL and unpaired surrogate written as a `\\u0000`-style escape. */
function shownKey(key: string): string {
  let shown = '';
  for (let i = 0; i < key.length; i++) {
    const unit = key.charCodeAt(i);
    const high = unit >= 0xd800 && unit <= 0xdbff;
    const low = unit >= 0xdc00 && unit <= 0xdfff;
    const next = key.charCodeAt(i + 1);
    if (high && next >= 0xdc00 && next <= 0xdfff) {
      shown += key.slice(i, i + 2);
      i++;
    } else if (unit === 0 || high || low) shown += `\\u${unit.toString(16).padStart(4, '0')}`;
    else shown += key[i];
  }
  return shown;
}

t.test(
  'property: any lead with NULs, surrogates or infinities is refused naming them; else kept exactly',
  async (t) => {
    const f = await fixture(t);
    const probes = fc
      .uniqueArray(fc.integer({ min: 0, max: leadProbes.length - 1 }), { minLength: 1, maxLength: 5 })
      .chain((indexes) => fc.tuple(...indexes.sort((a, b) => a - b).map((i) => leadProbes[i]!)));
    await checkProperty(
      t,
      'POST /v1/leads',
      fc.asyncProperty(probes, async (chosen) => {
        const body: Record<string, unknown> = { full_name: 'Asha', email: email(), consent: true };
        for (const probe of chosen) probe.apply(body);
        const sent: Probe[] = chosen;
        const answer = await send(f, 'POST', '/v1/leads', jsonWithInfinities(body));
        if (answer.status >= 500) throw new Error(`5xx: ${answer.text}`);
        const refusedAs = sent.flatMap((p) => p.refusedAs).map(shownKey);
        if (refusedAs.length > 0) return assertRefused(answer, refusedAs, 'POST /v1/leads');
        if (answer.status !== 201) throw new Error(`expected 201, got ${answer.status} ${answer.text}`);
        const lead = (await send(f, 'GET', `/v1/leads/${String(answer.body.id)}`)).body;
        for (const probe of sent) {
          const problem = probe.check?.(lead);
          if (problem) throw new Error(problem);
        }
      }),
      80,
    );
  },
);

t.test(
  'property: any PATCH with NULs, surrogates, infinities or edge date-times: refused naming them, else kept',
  async (t) => {
    const f = await fixture(t);
    const id = await newLead(f);
    const patch = fc.record(
      {
        note: text(5000),
        notes: text(2000),
        budget: number(-1e308, 1e308),
        badKey: badText(10),
        followUp: dateTimeParts,
      },
      { requiredKeys: [] },
    );
    await checkProperty(
      t,
      'PATCH /v1/leads/{id}',
      fc.asyncProperty(patch, async (p) => {
        const body: Record<string, unknown> = {};
        const refused: string[] = [];
        const custom: Record<string, unknown> = {};
        if (p.note) {
          body.note = `n${p.note.value}`;
          if (p.note.bad) refused.push('note');
        }
        if (p.notes) {
          custom.notes_text = p.notes.value;
          if (p.notes.bad) refused.push('custom_fields.notes_text');
        }
        if (p.budget) {
          custom.budget_lakhs = p.budget.value;
          if (p.budget.bad) refused.push('custom_fields.budget_lakhs');
        }
        if (p.badKey !== undefined) {
          custom[p.badKey] = 'x';
          refused.push(`custom_fields.${shownKey(p.badKey)}`);
        }
        if (Object.keys(custom).length) body.custom_fields = custom;
        let followUp: number | undefined;
        if (p.followUp) {
          body.next_follow_up_at = renderDateTime(p.followUp);
          followUp = expectedInstant(p.followUp);
          if (followUp === undefined) refused.push('next_follow_up_at');
        }
        const before = (await send(f, 'GET', `/v1/leads/${id}`)).body;
        const answer = await send(f, 'PATCH', `/v1/leads/${id}`, jsonWithInfinities(body));
        if (answer.status >= 500) throw new Error(`5xx: ${answer.text}`);
        if (refused.length > 0) return assertRefused(answer, refused, `PATCH ${JSON.stringify(body)}`);
        if (answer.status !== 200) throw new Error(`expected 200, got ${answer.status} ${answer.text}`);
        const after = (await send(f, 'GET', `/v1/leads/${id}`)).body;
        const wantCustom = { ...(before.custom_fields as Record<string, unknown>), ...custom };
        const problem =
          mismatch('custom_fields', after.custom_fields, wantCustom) ??
          (followUp === undefined
            ? mismatch('next_follow_up_at', after.next_follow_up_at, before.next_follow_up_at)
            : mismatch('next_follow_up_at', after.next_follow_up_at, new Date(followUp).toISOString()));
        if (problem) throw new Error(problem);
        if (p.note) {
          const events = await f.services.store.readStream(`lead-${id}`);
          const last = events.at(-1)!;
          if (last.type !== 'lead.note_added' || last.data.note !== `n${p.note.value}`.trim())
            throw new Error(`the note is not on the timeline as sent: ${JSON.stringify(last.data)}`);
        }
      }),
      80,
    );
  },
);

t.test('property: webhook endpoint description and url: refused naming them, else kept exactly', async (t) => {
  const f = await fixture(t);
  const endpoint = fc.record({ description: text(500), path: text(200) });
  await checkProperty(
    t,
    'POST /v1/webhooks',
    fc.asyncProperty(endpoint, async ({ description, path }) => {
      const url = `https://127.0.0.1/${path.value}`;
      const refused = [...(description.bad ? ['description'] : []), ...(path.bad ? ['url'] : [])];
      const answer = await send(
        f,
        'POST',
        '/v1/webhooks',
        JSON.stringify({ url, description: description.value, events: ['lead.created'] }),
      );
      if (answer.status >= 500) throw new Error(`5xx: ${answer.text}`);
      if (refused.length > 0) return assertRefused(answer, refused, 'POST /v1/webhooks');
      // The address rules may refuse a storable URL too (src/webhooks): then by naming it, like any other refusal.
      if (answer.status === 400) return assertRefused(answer, ['url'], 'POST /v1/webhooks (address rules)');
      if (answer.status !== 201) throw new Error(`expected 201, got ${answer.status} ${answer.text}`);
      const listed = (await send(f, 'GET', '/v1/webhooks')).body.data as Record<string, unknown>[];
      const stored = listed.find((e) => e.id === answer.body.id);
      const problem =
        mismatch('description', stored?.description, description.value) ?? mismatch('url', stored?.url, url);
      if (problem) throw new Error(problem);
      const deleted = await send(f, 'DELETE', `/v1/webhooks/${String(answer.body.id)}`);
      if (deleted.status !== 204) throw new Error(`DELETE answered ${deleted.status}`);
    }),
    40,
  );
});
