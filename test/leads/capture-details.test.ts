import { readFileSync } from 'node:fs';
import t from 'tap';
import { TestClock } from '../support/app.js';
import type { WorkspaceDefinition } from '../../src/workspaces/definition.js';
import { ALLOWED_ORIGIN, fakeCaptcha, leadBody, leadsFixture } from './helpers.js';

const demo = JSON.parse(
  readFileSync(new URL('../../definitions/demo-workspace.json', import.meta.url), 'utf8'),
) as WorkspaceDefinition;
const DAY_MS = 24 * 60 * 60 * 1000;

t.test(
  'consent on a new lead: at is the capture time; source is the key source, or <source>@<consent_text_version> for public keys',
  async (t) => {
    const clock = new TestClock(new Date('2026-11-01T10:00:00.000Z'));
    const f = await leadsFixture(t, { now: clock.now });

    clock.advance(1234);
    const capturedAt = clock.now().toISOString();
    const res = await f.post(leadBody());
    t.equal(res.status, 201);
    clock.advance(60_000);
    const lead = await f.get(`/v1/leads/${res.body.id}`);
    t.same(lead.body.consent, { at: capturedAt, source: 'api' }, 'a secret key: the capture time and the source key');
    t.equal(lead.body.created_at, capturedAt, 'the consent time is the creation time, not the read time');

    const partner = await f.key({ sourceKey: 'partner' });
    const capturedLater = clock.now().toISOString();
    const viaPartner = await f.post(leadBody(), { key: partner.value });
    t.equal(viaPartner.status, 201);
    clock.advance(5_000);
    t.same(
      (await f.get(`/v1/leads/${viaPartner.body.id}`)).body.consent,
      { at: capturedLater, source: 'partner' },
      "a key with a source: that source's key",
    );

    const capturedPublic = clock.now().toISOString();
    const viaForm = await f.post(leadBody({ captcha_token: 'none' }), {
      key: f.publicLive,
      headers: { origin: ALLOWED_ORIGIN },
    });
    t.equal(viaForm.status, 201);
    t.same(
      (await f.get(`/v1/leads/${viaForm.body.id}`)).body.consent,
      { at: capturedPublic, source: 'web_form@2026-01' },
      'a public key: web_form@<consent_text_version>',
    );
  },
);

t.test(
  'consent that is not the boolean true answers consent_required; with other problems, validation_failed names it',
  async (t) => {
    const f = await leadsFixture(t);
    for (const consent of ['true', 1, null, 'yes', 0, {}]) {
      const res = await f.post(leadBody({ consent }));
      t.equal(res.status, 400, `consent ${JSON.stringify(consent)}`);
      t.equal(res.body.error, 'consent_required', `consent ${JSON.stringify(consent)} → consent_required`);
      t.notOk('fields' in res.body, 'consent_required carries no fields');
      t.type(res.body.message, 'string');
      t.type(res.body.request_id, 'string');
    }
    const combined = await f.post(leadBody({ consent: 'true', highest_qualification: 'phd' }));
    t.equal(combined.status, 400);
    t.equal(combined.body.error, 'validation_failed', 'another problem too: one validation_failed');
    t.same(
      Object.keys(combined.body.fields as object).sort(),
      ['consent', 'highest_qualification'],
      'naming consent beside the other field',
    );
    t.match(combined.body.fields, { consent: 'must be true' });
    const count = await f.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM leads');
    t.equal(count.rows[0]!.n, 0, 'none of them made a lead');
  },
);

t.test(
  'LeadCreate field rules not covered elsewhere: each bad value is one validation_failed naming its field',
  async (t) => {
    const f = await leadsFixture(t);
    const cases: [string, Record<string, unknown>, string][] = [
      ['an unknown highest_qualification', { highest_qualification: 'phd' }, 'highest_qualification'],
      ['highest_qualification in another case', { highest_qualification: 'Bachelors' }, 'highest_qualification'],
      ['an unknown english_test.type', { english_test: { type: 'CAMBRIDGE', overall: 7 } }, 'english_test.type'],
      ['english_test.type in another case', { english_test: { type: 'ielts', overall: 7 } }, 'english_test.type'],
      ['english_test without overall', { english_test: { type: 'IELTS', listening: 7 } }, 'english_test.overall'],
      ['english_test without type', { english_test: { overall: 7 } }, 'english_test.type'],
      ['english_test.overall as text', { english_test: { type: 'IELTS', overall: '7.5' } }, 'english_test.overall'],
      [
        'english_test.listening as text',
        { english_test: { type: 'IELTS', overall: 7, listening: 'high' } },
        'english_test.listening',
      ],
      ['english_test not an object', { english_test: 'IELTS 7.5' }, 'english_test'],
      ['passport_available as text', { passport_available: 'yes' }, 'passport_available'],
      ['passport_available as a number', { passport_available: 1 }, 'passport_available'],
      ['previous_refusals above 20', { previous_refusals: 21 }, 'previous_refusals'],
      ['previous_refusals below 0', { previous_refusals: -1 }, 'previous_refusals'],
      ['previous_refusals as text', { previous_refusals: '2' }, 'previous_refusals'],
      ['work_experience_years above 60', { work_experience_years: 61 }, 'work_experience_years'],
      ['work_experience_years just above 60', { work_experience_years: 60.5 }, 'work_experience_years'],
      ['work_experience_years as text', { work_experience_years: '3' }, 'work_experience_years'],
      ['score_percent below 0', { score_percent: -0.5 }, 'score_percent'],
      ['score_percent just above 100', { score_percent: 100.01 }, 'score_percent'],
      ['score_percent as text', { score_percent: '88' }, 'score_percent'],
    ];
    for (const [name, extra, field] of cases) {
      const res = await f.post(leadBody(extra));
      t.equal(res.status, 400, name);
      t.equal(res.body.error, 'validation_failed', `${name}: validation_failed`);
      t.same(Object.keys((res.body.fields ?? {}) as object), [field], `${name}: fields names ${field} only`);
    }
    const count = await f.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM leads');
    t.equal(count.rows[0]!.n, 0, 'no refused body made a lead');

    // The accepted values of the same fields, read back as sent.
    for (const qualification of [
      'secondary',
      'higher_secondary',
      'diploma',
      'bachelors',
      'masters',
      'doctorate',
      'other',
    ]) {
      const res = await f.post(leadBody({ highest_qualification: qualification }));
      t.equal(res.status, 201, qualification);
      t.equal((await f.get(`/v1/leads/${res.body.id}`)).body.highest_qualification, qualification);
    }
    for (const type of ['IELTS', 'PTE', 'TOEFL', 'DUOLINGO']) {
      const englishTest = {
        type,
        overall: 7.5,
        listening: 8,
        reading: 7,
        writing: 6.5,
        speaking: 7,
        test_date: '2026-03-14',
      };
      const res = await f.post(
        leadBody({
          english_test: englishTest,
          passport_available: false,
          previous_refusals: 1,
          work_experience_years: 2.5,
          score_percent: 72.4,
        }),
      );
      t.equal(res.status, 201, type);
      t.match((await f.get(`/v1/leads/${res.body.id}`)).body, {
        english_test: englishTest,
        passport_available: false,
        previous_refusals: 1,
        work_experience_years: 2.5,
        score_percent: 72.4,
      });
    }
    const nulls = await f.post(
      leadBody({
        highest_qualification: null,
        english_test: null,
        passport_available: null,
        previous_refusals: null,
        work_experience_years: null,
        score_percent: null,
      }),
    );
    t.equal(nulls.status, 201, 'null is accepted for each of them');
    t.match((await f.get(`/v1/leads/${nulls.body.id}`)).body, {
      highest_qualification: null,
      english_test: null,
      passport_available: null,
      previous_refusals: null,
      work_experience_years: null,
      score_percent: null,
    });
  },
);

t.test('a required custom field must be given on creation', async (t) => {
  const f = await leadsFixture(t, {
    definition: {
      custom_fields: [
        ...demo.custom_fields,
        { key: 'passport_number', label: 'Passport number', type: 'text', required: true, help_text: null },
      ],
    },
  });
  const meta = await f.get('/v1/meta/fields');
  t.match(
    (meta.body.fields as Record<string, unknown>[]).find((field) => field.key === 'passport_number'),
    { required: true },
    'the workspace lists it as required',
  );

  for (const [name, extra] of [
    ['no custom_fields', {}],
    ['other custom fields only', { custom_fields: { budget_lakhs: 12 } }],
    ['a null value (no value on creation)', { custom_fields: { passport_number: null } }],
  ] as const) {
    const res = await f.post(leadBody(extra));
    t.equal(res.status, 400, name);
    t.equal(res.body.error, 'validation_failed', name);
    t.same(res.body.fields, { 'custom_fields.passport_number': 'is required' }, `${name}: the field is named`);
  }
  const withOthers = await f.post(leadBody({ intake: 'next year' }));
  t.same(
    Object.keys(withOthers.body.fields as object).sort(),
    ['custom_fields.passport_number', 'intake'],
    'reported with the other problems in one answer',
  );
  const wrongType = await f.post(leadBody({ custom_fields: { passport_number: 12345678 } }));
  t.equal(wrongType.body.error, 'validation_failed');
  t.same(
    Object.keys(wrongType.body.fields as object),
    ['custom_fields.passport_number'],
    'a value of the wrong type is one problem of that field',
  );
  t.not(
    (wrongType.body.fields as Record<string, string>)['custom_fields.passport_number'],
    'is required',
    'named for its type, not as missing',
  );
  t.equal(
    (await f.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM leads')).rows[0]!.n,
    0,
    'nothing was created',
  );

  const ok = await f.post(leadBody({ custom_fields: { passport_number: 'P1234567', budget_lakhs: 12 } }));
  t.equal(ok.status, 201);
  t.same(
    (await f.get(`/v1/leads/${ok.body.id}`)).body.custom_fields,
    { passport_number: 'P1234567', budget_lakhs: 12 },
    'the value is on the lead',
  );
});

t.test(
  'Idempotency-Key with a captcha-checked public key: the repeat is answered without asking the provider again',
  async (t) => {
    const clock = new TestClock();
    const captcha = await fakeCaptcha(t);
    const f = await leadsFixture(t, {
      now: clock.now,
      config: { captchaVerifyUrls: { turnstile: captcha.url, hcaptcha: captcha.url, recaptcha: captcha.url } },
      definition: {
        widget: {
          ...demo.widget,
          captcha: { provider: 'turnstile', site_key: 'site-key-1', secret: 'captcha-secret-1' },
        },
      },
    });
    // Tokens are single-use, as with the real providers: a token verifies once.
    const used = new Set<string>();
    captcha.answer = (form) => {
      const fresh = form.response !== undefined && form.response.startsWith('ok') && !used.has(form.response);
      if (form.response) used.add(form.response);
      return {
        body: fresh
          ? { success: true, hostname: 'www.example.com' }
          : { success: false, 'error-codes': ['timeout-or-duplicate'] },
      };
    };
    const body = leadBody({ captcha_token: 'ok-token-1' });
    const headers = { origin: ALLOWED_ORIGIN, 'idempotency-key': 'form-9f2c.attempt_1' };

    const first = await f.post(body, { key: f.publicLive, headers });
    t.equal(first.status, 201);
    t.equal(captcha.requests.length, 1, 'the first submission verified its captcha');
    t.match(captcha.requests[0], { secret: 'captcha-secret-1', response: 'ok-token-1' });
    t.notOk(first.headers.get('idempotent-replayed'));

    clock.advance(DAY_MS - 1000);
    const again = await f.post(body, { key: f.publicLive, headers });
    t.equal(again.status, first.status, 'the repeat within 24 h answers the first status');
    t.same(again.body, first.body, 'and the first body');
    t.equal(again.headers.get('idempotent-replayed'), 'true');
    t.equal(captcha.requests.length, 1, 'without calling the captcha provider again');

    captcha.answer = () => ({ status: 500, body: 'down' });
    const whileDown = await f.post(body, { key: f.publicLive, headers });
    t.equal(whileDown.status, 201, 'a repeat is answered even while the provider is down');
    t.same(whileDown.body, first.body);
    t.equal(captcha.requests.length, 1);

    const different = await f.post({ ...body, city: 'Delhi' }, { key: f.publicLive, headers });
    t.equal(different.status, 409, 'the same key with a different body');
    t.equal(different.body.error, 'idempotency_key_reused');
    t.equal(captcha.requests.length, 1, 'refused from the stored answer, before the provider is asked');

    const leads = await f.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM leads');
    t.equal(leads.rows[0]!.n, 1, 'one lead');
    const events = await f.pool.query<{ type: string; n: number }>(
      'SELECT type, count(*)::int AS n FROM events GROUP BY type',
    );
    t.same(events.rows, [{ type: 'lead.created', n: 1 }], 'the repeats ran nothing');

    captcha.answer = (form) => ({
      body:
        form.response === 'ok-token-1'
          ? { success: false, 'error-codes': ['timeout-or-duplicate'] }
          : { success: true, hostname: 'www.example.com' },
    });
    clock.advance(2000);
    const expired = await f.post(body, { key: f.publicLive, headers });
    t.equal(captcha.requests.length, 2, 'after 24 h the key is new: the captcha is verified again');
    t.equal(expired.status, 400);
    t.equal(expired.body.error, 'captcha_failed', 'and the used token no longer verifies');
  },
);
