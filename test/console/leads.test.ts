import t from 'tap';
import { memberOf } from '../identity/support.js';
import { seedWorkspace, TestClock } from '../support/app.js';
import { consoleFixture } from './support.js';

type Fixture = Awaited<ReturnType<typeof consoleFixture>>;

async function capture(f: Fixture, lead: Record<string, unknown>): Promise<string> {
  const response = await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { consent: true, ...lead },
  });
  t.equal(response.status, 201, `captured ${String(lead.full_name)}`);
  return ((await response.json()) as { id: string }).id;
}

t.test(
  'the lead list: search by part of a phone, name or email through the trigram index; filters; pages',
  async (t) => {
    const f = await consoleFixture(t);
    const priya = await capture(f, { full_name: 'Priya Raman', phone: '+919812345678', email: 'priya.r@example.org' });
    await capture(f, {
      full_name: 'Arjun Mehta',
      phone: '+919800011122',
      email: 'arjun@example.org',
      visa_type: 'work',
    });
    const c = f.client();
    await c.signIn(memberOf('viewer'));
    const base = `/console/w/${f.ws.workspace.slug}/leads`;
    const byPhone = await c.get(`${base}?q=1234`);
    t.equal(byPhone.status, 200);
    t.match(byPhone.text, 'Priya Raman');
    t.notMatch(byPhone.text, 'Arjun Mehta');
    t.match((await c.get(`${base}?q=RAMAN`)).text, `href="${base}/${priya}"`, 'case-insensitive, part of the name');
    t.match((await c.get(`${base}?q=${encodeURIComponent('ARJUN@EX')}`)).text, 'Arjun Mehta', 'part of the email');
    t.notMatch((await c.get(`${base}?q=${encodeURIComponent('%%%')}`)).text, 'Arjun Mehta', 'wildcards are text');
    const short = await c.get(`${base}?q=98`);
    t.equal(short.status, 400);
    t.match(short.text, /id="f-q-error">Enter at least three characters/, 'the refusal next to the field');
    const work = await c.get(`${base}?visa_type=work`);
    t.match(work.text, 'Arjun Mehta');
    t.notMatch(work.text, 'Priya Raman');
    t.equal((await c.get(`${base}?created_from=yesterday`)).status, 400);
    const plan = await f.app.pool.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT id FROM leads WHERE tenant_id = $1 AND NOT sandbox
       AND lower(coalesce(full_name, '') || ' ' || coalesce(phone, '') || ' ' || coalesce(email, '')) LIKE '%12345%'`,
      [f.ws.workspace.id],
    );
    await f.app.pool.query('SET enable_seqscan = off');
    const forced = await f.app.pool.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT id FROM leads WHERE lower(coalesce(full_name, '') || ' ' || coalesce(phone, '') || ' ' || coalesce(email, '')) LIKE '%12345%'`,
    );
    t.ok(plan.rows.length > 0);
    t.match(
      forced.rows.map((r) => r['QUERY PLAN']).join('\n'),
      /leads_search_trgm/,
      'the search expression is indexed',
    );
  },
);

t.test('a lead page: change stage to lost with a reason, see it atop the timeline; convert; erase', async (t) => {
  const f = await consoleFixture(t);
  const id = await capture(f, { full_name: 'Kavya Iyer', phone: '+919876500001', email: 'kavya@example.org' });
  const admin = f.client();
  await admin.signIn(memberOf('admin'));
  const path = `/console/w/${f.ws.workspace.slug}/leads/${id}`;
  const page = await admin.get(path);
  t.equal(page.status, 200);
  t.match(page.text, 'Kavya Iyer');
  t.match(page.text, '<strong>Lead created</strong>', 'the event by its name');

  const noReason = await admin.post(path, { stage: 'lost' });
  t.equal(noReason.status, 400);
  t.match(noReason.text, /lost_reason_key|lost reason/i, 'the command refuses: a lost reason is needed');
  const lost = await admin.post(path, { stage: 'lost', lost_reason: 'not_reachable', note: 'Three calls unanswered' });
  t.equal(lost.status, 303);
  const after = await admin.get(`${path}?done=changed`);
  t.match(after.text, 'The lead was changed.');
  const timeline = /<ol class="timeline"[^>]*>([\s\S]*?)<\/ol>/.exec(after.text)![1]!;
  const types = [...timeline.matchAll(/<strong>([^<]+)<\/strong>/g)].map((m) => m[1]);
  t.same(types.slice(0, 2), ['Note added', 'Marked lost'], 'newest first: the note, then the move to lost');
  t.match(timeline, /by The admin &lt;admin@northstar.example&gt;/, 'who');
  t.match(timeline, '<p>Marked lost: Not reachable (was at stage New)</p>', 'the move to lost in words');
  t.match(timeline, '<p>Note: Three calls unanswered</p>', 'the note in words');
  t.notMatch(timeline, /[{}[\]]|&quot;\w+&quot;:/, 'no summary shows JSON');

  const badDate = await admin.post(path, { stage: 'lost', follow_up: 'soon' });
  t.equal(badDate.status, 400);
  t.match(badDate.text, /id="f-follow_up-error">Enter a date and time/);

  const back = await admin.post(path, { stage: 'contacted' });
  t.equal(back.status, 303);
  const contacted = /<ol class="timeline"[^>]*>([\s\S]*?)<\/ol>/.exec((await admin.get(path)).text)![1]!;
  t.match(contacted, /<p>Changed stage to Contacted, lost reason to none<\/p>/, 'the stage change in words, on top');
  const unconfirmedConversion = await admin.post(`${path}/convert`, {});
  t.equal(unconfirmedConversion.status, 400, 'a conversion is confirmed first');
  t.match(unconfirmedConversion.text, 'Nothing was converted yet');
  const converted = await admin.post(`${path}/convert`, { confirm: 'yes' });
  t.equal(converted.status, 303);
  t.match(converted.headers.get('location'), /\/applications\/[0-9a-f-]{36}\?done=converted$/);
  const locked = await admin.post(path, { stage: 'qualified' });
  t.equal(locked.status, 409);
  t.match(locked.text, /converted to an application and can no longer be changed/);

  const unconfirmed = await admin.post(`${path}/erase`, {});
  t.equal(unconfirmed.status, 400);
  t.match(unconfirmed.text, /id="f-confirm-error">Tick the box/);
  const erased = await admin.post(`${path}/erase`, { confirm: 'yes' });
  t.equal(erased.status, 303);
  for (const p of [
    path,
    `/console/w/${f.ws.workspace.slug}/leads`,
    `/console/w/${f.ws.workspace.slug}/leads?q=kavya`,
  ]) {
    const text = (await admin.get(p)).text;
    for (const personal of ['Kavya', 'kavya@example.org', '9876500001', 'Three calls unanswered'])
      t.notMatch(text, personal, `${p} shows no ${personal}`);
  }
});

t.test('erasing asks for a recent sign-in: the password next to its field', async (t) => {
  const clock = new TestClock();
  const f = await consoleFixture(t, { clock });
  const id = await capture(f, { full_name: 'Rohan Das', phone: '+919876500002' });
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  clock.advance(11 * 60_000);
  const path = `/console/w/${f.ws.workspace.slug}/leads/${id}`;
  t.match((await owner.get(path)).text, 'id="f-password"', 'the form asks for the password');
  const refused = await owner.post(`${path}/erase`, { confirm: 'yes', password: 'wrong password entirely' });
  t.equal(refused.status, 403);
  t.match(refused.text, /id="f-password-error">That is not your password/);
  t.equal(
    (await owner.post(`${path}/erase`, { confirm: 'yes', password: 'correct horse battery staple' })).status,
    303,
  );
});

t.test("another workspace's records are not found, alike, through every records page", async (t) => {
  const f = await consoleFixture(t);
  const other = await seedWorkspace(f.app);
  const response = await f.app.request('/v1/leads', {
    method: 'POST',
    key: other.live,
    json: { full_name: 'Other Tenant', phone: '+919800099999', consent: true },
  });
  const foreign = ((await response.json()) as { id: string }).id;
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  const w = `/console/w/${f.ws.workspace.slug}`;
  for (const [method, path] of [
    ['get', `${w}/leads/${foreign}`],
    ['post', `${w}/leads/${foreign}`],
    ['post', `${w}/leads/${foreign}/convert`],
    ['post', `${w}/leads/${foreign}/erase`],
  ] as const) {
    const answer =
      method === 'get' ? await owner.get(path) : await owner.post(path, { note: 'x', confirm: 'yes', stage: 'lost' });
    t.equal(answer.status, 404, `${method} ${path}`);
    t.notMatch(answer.text, 'Other Tenant');
  }
  t.notMatch((await owner.get(`${w}/leads?q=Other`)).text, 'Other Tenant', 'nor found by a search');
  t.equal((await owner.get(`/console/w/${other.workspace.slug}/leads`)).status, 404, 'nor its workspace');
});
