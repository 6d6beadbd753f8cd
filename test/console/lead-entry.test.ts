import t from 'tap';
import { can, ROLES } from '../../src/identity/permissions.js';
import { bodyOfForm } from '../../src/console/pages/lead-entry.js';
import { memberOf } from '../identity/support.js';
import { consoleFixture, type ConsoleClient } from './support.js';

type Fixture = Awaited<ReturnType<typeof consoleFixture>>;

/** The form's hidden one-time key, as the page shows it. */
const formKeyOf = (text: string) => /name="form_key"\s+value="([A-Za-z0-9_-]{22})"/.exec(text)?.[1];
/** Each field's error as the page shows it, by field name. */
function fieldErrors(text: string): Record<string, string> {
  const errors: Record<string, string> = {};
  for (const m of text.matchAll(/<p class="error" id="f-([a-z_]+)-error">([^<]*)<\/p>/g)) errors[m[1]!] = m[2]!;
  return errors;
}

async function openForm(f: Fixture, c: ConsoleClient): Promise<string> {
  const page = await c.get(`/console/w/${f.ws.workspace.slug}/leads/new`);
  t.equal(page.status, 200, 'the form is shown');
  const key = formKeyOf(page.text);
  t.ok(key, 'with a one-time key');
  return key!;
}

async function leadCount(f: Fixture): Promise<number> {
  const r = await f.app.pool.query(`SELECT count(*)::int AS n FROM leads WHERE tenant_id = $1`, [f.ws.workspace.id]);
  return (r.rows[0] as { n: number }).n;
}

t.test('field errors are the API’s own, each by its field, and what was typed is kept', async (t) => {
  const f = await consoleFixture(t);
  const c = f.client();
  await c.signIn(memberOf('counsellor'));
  const cases: Record<string, string>[] = [
    { full_name: '', phone: '12', email: 'not-an-email' },
    { full_name: 'Asha Rao', phone: '+91 98765 4321x', country_interest: '', visa_type: 'tourist' },
    { full_name: 'x'.repeat(130), email: 'asha@@example.com', consent: 'yes' },
    { full_name: 'Asha Rao', phone: '+91 98765 43210', course: 'y'.repeat(210), consent: 'yes' },
  ];
  for (const form of cases) {
    const body = bodyOfForm(form);
    const api = await f.app.request('/v1/leads', { method: 'POST', key: f.ws.live, json: body });
    t.equal(api.status, 400, 'the API refuses the same body');
    const details = ((await api.json()) as { fields?: Record<string, string> }).fields ?? {};
    const answer = await c.post(`/console/w/${f.ws.workspace.slug}/leads/new`, {
      ...form,
      form_key: await openForm(f, c),
    });
    t.equal(answer.status, 400, 'the form is refused');
    const shown = fieldErrors(answer.text);
    const consentOnly = body.consent === false;
    const apiFields = Object.keys(details).filter((k) => !(consentOnly && k === 'consent'));
    t.same(
      Object.keys(shown)
        .filter((k) => k !== 'consent')
        .sort(),
      apiFields.sort(),
      `the same fields: ${apiFields.join(', ')}`,
    );
    for (const field of apiFields) t.match(shown[field], details[field]!, `${field}: the API’s words`);
    if (form.full_name) t.match(answer.text, `value="${form.full_name}"`, 'the name typed is kept');
  }
  t.equal(await leadCount(f), 0, 'no lead was made');
});

t.test(
  'an entered lead: the member is the actor, the console the source; a second submit makes no second lead',
  async (t) => {
    const f = await consoleFixture(t);
    const c = f.client();
    await c.signIn(memberOf('counsellor'));
    const key = await openForm(f, c);
    const form = {
      full_name: 'Gurpreet Sandhu',
      phone: '098765 43210',
      email: 'Gurpreet@Example.com',
      visa_type: 'spouse_dependent',
      country_interest: 'US',
      message: 'Walked in asking about a spouse visa',
      consent: 'yes',
      form_key: key,
    };
    const [first, second] = await Promise.all([
      c.post(`/console/w/${f.ws.workspace.slug}/leads/new`, form),
      c.post(`/console/w/${f.ws.workspace.slug}/leads/new`, form),
    ]);
    t.equal(first.status, 303);
    t.equal(second.status, 303);
    t.equal(first.headers.get('location'), second.headers.get('location'), 'both submits land on the same lead');
    t.equal(await leadCount(f), 1, 'one lead');
    const third = await c.post(`/console/w/${f.ws.workspace.slug}/leads/new`, form);
    t.equal(third.headers.get('location'), first.headers.get('location'), 'a later resubmit (back button) too');
    t.equal(await leadCount(f), 1, 'still one lead');
    const changed = await c.post(`/console/w/${f.ws.workspace.slug}/leads/new`, { ...form, city: 'Pune' });
    t.equal(changed.status, 409, 'the same form changed after it was sent is refused');
    t.match(changed.text, 'This form was sent already');

    const page = await c.get(first.headers.get('location')!);
    t.match(page.text, 'The lead was entered');
    t.match(page.text, '+91 98765 43210', 'the phone as India writes it');
    t.match(page.text, 'Spouse or dependant', 'the visa type by name');
    t.match(page.text, 'United States', 'the country by name');
    t.notMatch(page.text, /spouse_dependent|>US</, 'no raw code');
    const id = /leads\/([0-9a-f-]{36})/.exec(first.headers.get('location')!)![1]!;
    const events = await f.app.pool.query(
      `SELECT type, data, metadata FROM events WHERE stream_id = $1 ORDER BY revision`,
      [`lead-${id}`],
    );
    const created = events.rows[0] as {
      type: string;
      data: { payload: { source: { key: string } } };
      metadata: { actor: { type: string; email: string } };
    };
    t.equal(created.type, 'lead.created');
    t.equal(created.metadata.actor.type, 'user', 'the actor is the member');
    t.equal(created.metadata.actor.email, memberOf('counsellor'), 'the counsellor');
    t.equal(created.data.payload.source.key, 'console', 'the source says console');

    const api = await f.app.request(`/v1/leads/${id}`, { key: f.ws.live });
    const lead = (await api.json()) as { phone: string; email: string; source: { name: string } };
    t.equal(lead.phone, '+919876543210', 'normalised as the API normalises');
    t.equal(lead.email, 'gurpreet@example.com');
    t.equal(lead.source.name, 'Console');
  },
);

t.test('a person who already has a lead: the form says so and links it, and no second lead is made', async (t) => {
  const f = await consoleFixture(t);
  const created = await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { full_name: 'Meera Nair', email: 'meera@example.com', consent: true },
  });
  const existing = ((await created.json()) as { id: string }).id;
  const c = f.client();
  await c.signIn(memberOf('manager'));
  const answer = await c.post(`/console/w/${f.ws.workspace.slug}/leads/new`, {
    full_name: 'Meera N.',
    email: 'MEERA@example.com',
    consent: 'yes',
    form_key: await openForm(f, c),
  });
  t.equal(answer.status, 303);
  const page = await c.get(answer.headers.get('location')!);
  t.match(page.text, 'This person already has a lead');
  t.match(page.text, `href="/console/w/${f.ws.workspace.slug}/leads/${existing}"`, 'linked');
  t.equal(await leadCount(f), 1, 'no second lead');
  const lead = await c.get(`/console/w/${f.ws.workspace.slug}/leads/${existing}`);
  t.match(lead.text, 'Enquiry received again', 'the enquiry is on its timeline');
});

t.test('the form and its link are offered exactly to the roles the table allows', async (t) => {
  const f = await consoleFixture(t);
  for (const role of ROLES) {
    const c = f.client();
    await c.signIn(memberOf(role));
    const list = await c.get(`/console/w/${f.ws.workspace.slug}/leads`);
    const allowed = can(role, 'leads.create');
    t.equal(list.text.includes('/leads/new"'), allowed, `${role}: the link ${allowed ? 'shown' : 'not shown'}`);
    const form = await c.get(`/console/w/${f.ws.workspace.slug}/leads/new`);
    t.equal(form.status, allowed ? 200 : 403, `${role}: the form`);
    const post = await c.post(`/console/w/${f.ws.workspace.slug}/leads/new`, {
      full_name: `Role ${role}`,
      email: `${role}-walk-in@example.com`,
      consent: 'yes',
      form_key: `${role}`.padEnd(22, 'x'),
    });
    t.equal(post.status, allowed ? 303 : 403, `${role}: the entry`);
  }
});
