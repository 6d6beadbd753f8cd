import t from 'tap';
import { LEAD_FIELDS, leadBody, leadsFixture, streamTypes } from './helpers.js';

t.test('a secret key creates a lead with normalised fields, source, branch, owner, stage and score', async (t) => {
  const f = await leadsFixture(t);
  const res = await f.post({
    full_name: '  Arjun Mehta ',
    phone: '098765 43210',
    email: ' Arjun.Mehta@Example.COM ',
    city: 'Bengaluru',
    country_interest: 'ca',
    visa_type: 'student',
    intake: '2027-01',
    highest_qualification: 'bachelors',
    english_test: { type: 'IELTS', overall: 7.5, test_date: '2026-05-02' },
    passport_available: true,
    utm: { source: 'google', campaign: 'autumn' },
    custom_fields: { preferred_callback: 'evening', budget_lakhs: 25 },
    message: 'Looking for a masters in Canada',
    consent: true,
  });
  t.equal(res.status, 201);
  t.match(res.body, { id: /^[0-9a-f-]{36}$/, status: 'new', duplicate: false, test_mode: false });
  t.equal(res.body.assigned_to, 'meera@northstar.example', 'the only counsellor of the Bengaluru branch owns it');
  t.same(Object.keys(res.body).sort(), ['assigned_to', 'duplicate', 'id', 'status', 'test_mode']);

  const lead = await f.get(`/v1/leads/${res.body.id}`);
  t.equal(lead.status, 200);
  t.same(Object.keys(lead.body).sort(), [...LEAD_FIELDS].sort(), 'every Lead field and no other');
  t.match(lead.body, {
    full_name: 'Arjun Mehta',
    phone: '+919876543210',
    email: 'arjun.mehta@example.com',
    country_interest: 'CA',
    branch: { code: 'BLR' },
    owner: { email: 'meera@northstar.example', name: 'Meera Iyer' },
    stage: { key: 'new', name: 'New' },
    source: { key: 'api', name: 'API' },
    campaign: 'autumn',
    utm: { source: 'google', campaign: 'autumn' },
    custom_fields: { preferred_callback: 'evening', budget_lakhs: 25 },
    converted: false,
    lost_reason: null,
    temperature: null,
    consent: { source: 'api' },
    stage_changed_at: null,
  });
  // phone 15 + email 10 + visa 10 + country 10 + intake 10 + bachelors 15 + English 15 + passport 10
  t.equal(lead.body.score, 95);
  t.equal(lead.body.created_at, lead.body.updated_at);
  t.same(await streamTypes(f, String(res.body.id)), ['lead.created']);
  const [created] = await f.services.store.readStream(`lead-${String(res.body.id)}`);
  t.same(created!.data.payload, lead.body, 'lead.created carries the Lead shape');
  t.equal(created!.data.message, 'Looking for a masters in Canada');
});

t.test('validation names every invalid field in one answer', async (t) => {
  const f = await leadsFixture(t);
  const res = await f.post({
    full_name: '',
    phone: '1'.repeat(33),
    email: 'not-an-email',
    intake: '2027-13',
    score_percent: 101,
    work_experience_years: -1,
    previous_refusals: 2.5,
    visa_type: 'tourist',
    utm: { source: 'x', fbclid: 'y' },
    english_test: { type: 'IELTS', overall: 7, extra: 1 },
    landing_page_url: 'not a url',
    date_of_birth: '2001-02-30',
    custom_fields: { nope: 1, budget_lakhs: 'ten' },
    unknown_thing: 1,
    consent: true,
  });
  t.equal(res.status, 400);
  t.equal(res.body.error, 'validation_failed');
  const fields = res.body.fields as Record<string, string>;
  for (const field of [
    'full_name',
    'phone',
    'intake',
    'score_percent',
    'work_experience_years',
    'previous_refusals',
    'visa_type',
    'utm.fbclid',
    'english_test.extra',
    'landing_page_url',
    'unknown_thing',
  ]) {
    t.ok(fields[field], `${field} is named`);
  }
  t.ok(fields.email, 'a bad email is named (business check runs beside the schema)');
  t.ok(fields.date_of_birth, 'an impossible date is named');
  t.ok(fields['custom_fields.nope'], 'an unknown custom field is named');
  t.ok(fields['custom_fields.budget_lakhs'], 'a custom field of the wrong type is named');
  t.notOk(fields.consent, 'consent was true');
  t.type(res.body.request_id, 'string');

  const lengths = await f.post(
    leadBody({
      full_name: 'x'.repeat(121),
      city: 'c'.repeat(121),
      state: 's'.repeat(121),
      course: 'c'.repeat(201),
      message: 'm'.repeat(2001),
      alt_phone: '1'.repeat(33),
      landing_page_url: `https://e.com/${'a'.repeat(2000)}`,
      utm: { medium: 'm'.repeat(201) },
    }),
  );
  t.same(
    Object.keys(lengths.body.fields as object).sort(),
    ['alt_phone', 'city', 'course', 'full_name', 'landing_page_url', 'message', 'state', 'utm.medium'].sort(),
  );

  const edges = await f.post(
    leadBody({
      full_name: 'x'.repeat(120),
      score_percent: 100,
      work_experience_years: 60,
      previous_refusals: 20,
      intake: '2027-12',
      message: 'm'.repeat(2000),
    }),
  );
  t.equal(edges.status, 201, 'values at the limits are accepted');
  const zero = await f.post(
    leadBody({ score_percent: 0, work_experience_years: 0, previous_refusals: 0, intake: '2027-01', email: '' }),
  );
  t.equal(zero.status, 201, 'lower limits and an empty email (with a phone) are accepted');
});

t.test('consent must be true', async (t) => {
  const f = await leadsFixture(t);
  for (const consent of [false, undefined]) {
    const body = leadBody({ consent });
    if (consent === undefined) delete body.consent;
    const res = await f.post(body);
    t.equal(res.status, 400);
    t.equal(res.body.error, 'consent_required', `consent ${String(consent)} → consent_required`);
  }
  const both = await f.post(leadBody({ consent: false, intake: 'soon' }));
  t.equal(both.body.error, 'validation_failed', 'other problems too: one validation answer');
  t.match(both.body.fields, { consent: 'must be true', intake: /pattern/ });
});

t.test('a phone or an email is required', async (t) => {
  const f = await leadsFixture(t);
  for (const body of [
    { full_name: 'A', consent: true },
    { full_name: 'A', phone: '', email: '', consent: true },
    { full_name: 'A', phone: null, email: null, consent: true },
    { full_name: 'A', phone: '   ', consent: true },
  ]) {
    const res = await f.post(body);
    t.equal(res.status, 400);
    t.equal(res.body.error, 'validation_failed');
    t.match(res.body.fields, { phone: 'a phone or an email is required', email: 'a phone or an email is required' });
  }
  t.equal(
    (await f.post({ full_name: 'A', email: 'only.email@example.org', consent: true })).status,
    201,
    'an email alone is enough',
  );
  t.equal(
    (await f.post({ full_name: 'B', phone: '+44 20 7946 0958', consent: true })).status,
    201,
    'a phone alone is enough',
  );
});

t.test('phones are normalised to E.164 with the default country; invalid ones are refused', async (t) => {
  const f = await leadsFixture(t);
  const cases: [string, string][] = [
    ['98765 43211', '+919876543211'],
    ['+1 (415) 555-2671', '+14155552671'],
    ['0044 20 7946 0959', '+442079460959'],
  ];
  for (const [input, e164] of cases) {
    const res = await f.post({ full_name: 'P', phone: input, consent: true });
    t.equal(res.status, 201, input);
    t.equal((await f.get(`/v1/leads/${res.body.id}`)).body.phone, e164, `${input} → ${e164}`);
  }
  const bad = await f.post({ full_name: 'P', phone: '12345', consent: true });
  t.equal(bad.status, 400);
  t.match(bad.body.fields, { phone: /not a valid phone number/ });
  const alt = await f.post(leadBody({ alt_phone: 'abc' }));
  t.match(alt.body.fields, { alt_phone: /not a valid phone number/ });
});

t.test('dates and countries', async (t) => {
  const f = await leadsFixture(t);
  const ok = await f.post(
    leadBody({ date_of_birth: '2000-02-29', english_test: { type: 'PTE', overall: 65, test_date: '2026-01-31' } }),
  );
  t.equal(ok.status, 201);
  const bad = await f.post(
    leadBody({
      date_of_birth: '01/02/2000',
      english_test: { type: 'PTE', overall: 65, test_date: '2999-01-01' },
      country_interest: 'XX',
    }),
  );
  t.equal(bad.status, 400);
  t.match(bad.body.fields, {
    date_of_birth: 'must be a date YYYY-MM-DD',
    'english_test.test_date': 'cannot be in the future',
    country_interest: /ISO 3166-1/,
  });
  const future = await f.post(leadBody({ date_of_birth: '2999-01-01' }));
  t.match(future.body.fields, { date_of_birth: 'cannot be in the future' });
});

t.test('test keys write to the sandbox only', async (t) => {
  const f = await leadsFixture(t);
  const res = await f.post(leadBody(), { key: f.test });
  t.equal(res.status, 201);
  t.equal(res.body.test_mode, true);
  t.equal((await f.get(`/v1/leads/${res.body.id}`, f.test)).status, 200, 'the test key reads it');
  t.equal((await f.get(`/v1/leads/${res.body.id}`, f.live)).status, 404, 'the live key does not');
  const live = await f.get('/v1/leads', f.live);
  t.same(live.body.data, [], 'live listing has no sandbox lead');
  const sandboxList = await f.get('/v1/leads', f.test);
  t.equal((sandboxList.body.data as unknown[]).length, 1);
  const [event] = await f.services.store.readStream(`lead-${String(res.body.id)}`);
  t.equal(event!.sandbox, true, 'the event is a sandbox event');
  const quota = await f.pool.query('SELECT coalesce(sum(used), 0)::int AS used FROM quota_counters');
  t.equal(quota.rows[0].used, 0, 'sandbox leads use no quota');
});

t.test('live leads count against the monthly quota; duplicates do not', async (t) => {
  const f = await leadsFixture(t, {
    definition: {
      plan: 'starter',
      limits: {
        monthly_leads: 2,
        rate: {
          key: { capacity: 1000, refill_per_second: 100 },
          scopes: { 'leads:create': { capacity: 1000, refill_per_second: 100 } },
        },
      },
    },
  });
  const first = leadBody();
  t.equal((await f.post(first)).status, 201);
  t.equal((await f.post(leadBody())).status, 201);
  const over = await f.post(leadBody());
  t.equal(over.status, 429);
  t.equal(over.body.error, 'quota_exceeded');
  t.equal((await f.post(first)).status, 200, 'a duplicate is still answered');
  t.equal((await f.post(leadBody(), { key: f.test })).status, 201, 'the sandbox is not limited');
});

t.test('source comes from the key, else api or web_form', async (t) => {
  const f = await leadsFixture(t);
  const partner = await f.key({ sourceKey: 'partner' });
  const res = await f.post(leadBody(), { key: partner.value });
  t.match((await f.get(`/v1/leads/${res.body.id}`)).body.source, { key: 'partner', name: 'Partner' });
});

t.test('spam rules: honeypot, links in the name, link-stuffed messages', async (t) => {
  const f = await leadsFixture(t);
  for (const extra of [
    { website: 'http://spam.example' },
    { full_name: 'Cheap pills www.spam.example' },
    { message: 'see http://a.example http://b.example http://c.example http://d.example' },
  ]) {
    const res = await f.post(leadBody(extra));
    t.equal(res.status, 400, JSON.stringify(extra));
    t.equal(res.body.error, 'spam_detected');
  }
  t.equal(
    (await f.post(leadBody({ website: '', message: 'my site is https://me.example' }))).status,
    201,
    'an empty honeypot and one link are fine',
  );
  t.equal(
    (await f.post(leadBody({ website: 'x' }), { key: f.test })).body.error,
    'spam_detected',
    'test keys run the same rules',
  );
  const count = await f.pool.query('SELECT count(*)::int AS n FROM leads');
  t.equal(count.rows[0].n, 1, 'spam created nothing');
});

t.test('bodies that are not JSON objects', async (t) => {
  const f = await leadsFixture(t);
  const array = await f.post([]);
  t.equal(array.status, 400);
  t.equal(array.body.error, 'validation_failed');
  const res = await f.request('/v1/leads', {
    method: 'POST',
    key: f.live,
    headers: { 'content-type': 'application/json' },
    body: '{nope',
  });
  t.equal(res.status, 400);
});
