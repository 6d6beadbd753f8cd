import fc from 'fast-check';
import t from 'tap';
import type { Lead } from '../../src/domain/leads/lead.js';
import { changeMembers } from '../../src/identity/members.js';
import { patchOf, type LeadForm } from '../../src/console/pages/leads.js';
import { memberOf } from '../identity/support.js';
import { checkProperty } from '../support/properties.js';
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

const timelineOf = (text: string) => /<ol class="timeline"[^>]*>([\s\S]*?)<\/ol>/.exec(text)?.[1] ?? '';

t.test('a counsellor who posts only a note keeps the owner (a field absent from the form is no change)', async (t) => {
  const f = await consoleFixture(t);
  const id = await capture(f, { full_name: 'Meera Nair', phone: '+919876511111' });
  const path = `/console/w/${f.ws.workspace.slug}/leads/${id}`;
  const admin = f.client();
  await admin.signIn(memberOf('admin'));
  t.equal((await admin.post(path, { owner: memberOf('manager') })).status, 303, 'the manager owns the lead');

  const counsellor = f.client();
  await counsellor.signIn(memberOf('counsellor'));
  const noted = await counsellor.post(path, { note: 'Called back, will send the passport scan' });
  t.equal(noted.status, 303);
  t.match(noted.headers.get('location'), /\?done=noted$/);
  const after = await counsellor.get(noted.headers.get('location')!);
  t.match(after.text, 'The note was added to the timeline.', 'says what happened');
  t.match(after.text, /<dt>Owner<\/dt>\s*<dd>The manager \(manager@northstar.example\)<\/dd>/, 'the owner stays');
  const timeline = timelineOf(after.text);
  t.match(timeline, 'Note: Called back, will send the passport scan');
  t.notMatch(timeline, '→ no owner', 'no change of owner was recorded');

  const cleared = await counsellor.post(path, { owner: '' });
  t.equal(cleared.status, 303, 'an owner field present and empty clears the owner');
  t.match(
    timelineOf((await counsellor.get(path)).text),
    'Owner changed: The manager (manager@northstar.example) → no owner',
  );
});

const STAGES = ['new', 'contacted', 'qualified', 'counselling', 'lost'];
const REASONS = ['not_reachable', 'not_eligible', 'chose_competitor'];
const OWNERS = ['manager@northstar.example', 'counsellor@northstar.example', 'admin@northstar.example'];
const FOLLOW_UPS = ['2026-12-01T09:30', '2027-01-15T18:00'];

const leadArb: fc.Arbitrary<LeadState> = fc.record({
  stage: fc.constantFrom(...STAGES),
  reason: fc.option(fc.constantFrom(...REASONS), { nil: null }),
  owner: fc.option(fc.constantFrom(...OWNERS), { nil: null }),
  followUp: fc.option(fc.constantFrom(...FOLLOW_UPS), { nil: null }),
});

/** A field absent, or present with any of the values it may hold (the lead's own among them), or empty. */
const maybe = (values: string[]) => fc.option(fc.constantFrom('', ...values), { nil: undefined });
const formArb: fc.Arbitrary<LeadForm> = fc.record(
  {
    stage: maybe(STAGES),
    lost_reason: maybe(REASONS),
    owner: maybe(OWNERS),
    follow_up: maybe(FOLLOW_UPS),
    note: maybe(['Called', 'Sent the checklist']),
  },
  { requiredKeys: [] },
);

interface LeadState {
  stage: string;
  reason: string | null;
  owner: string | null;
  followUp: string | null;
}

function leadOf(s: LeadState): Pick<Lead, 'stage' | 'lost_reason' | 'owner' | 'next_follow_up_at'> {
  return {
    stage: { key: s.stage, name: s.stage },
    lost_reason: s.reason ? { key: s.reason, name: s.reason } : null,
    owner: s.owner ? { id: s.owner, name: s.owner, email: s.owner } : null,
    next_follow_up_at: s.followUp ? `${s.followUp}:00.000Z` : null,
  };
}

t.test('a seeded property over random partial forms: only the fields present and different change', async (t) => {
  await checkProperty(
    t,
    'patchOf',
    fc.property(leadArb, formArb, (state, form) => {
      const lead = leadOf(state);
      const { patch, errors } = patchOf(form, lead, 'UTC');
      if (Object.keys(errors).length > 0) return false;
      const current: Record<string, string> = {
        stage: state.stage,
        lost_reason: state.reason ?? '',
        owner: state.owner ?? '',
        follow_up: state.followUp ?? '',
      };
      const key: Record<string, keyof typeof patch> = {
        stage: 'stage_key',
        lost_reason: 'lost_reason_key',
        owner: 'owner_email',
        follow_up: 'next_follow_up_at',
      };
      for (const [name, patchKey] of Object.entries(key)) {
        const sent = form[name as keyof LeadForm];
        // An empty stage choice is no stage: the stage is never cleared.
        const differs = sent !== undefined && sent !== current[name] && !(name === 'stage' && sent === '');
        if (differs !== patchKey in patch) return false;
      }
      const noted = form.note !== undefined && form.note !== '';
      return noted === 'note' in patch && Object.keys(patch).length <= 5;
    }),
    500,
  );
});

t.test('the owner drop-down lists active, accepted members of the branch who may own leads', async (t) => {
  const f = await consoleFixture(t);
  // Captured first: a new lead may be given to a counsellor by the workspace's assignment rule.
  const id = await capture(f, { full_name: 'Ishaan Kapoor', phone: '+919876522222' });
  await changeMembers(
    f.app.pool,
    f.ws.workspace.id,
    {
      type: 'invite',
      email: 'not-yet@northstar.example',
      name: 'Not Yet Accepted',
      role: 'counsellor',
      pending: 'link',
    },
    f.app.services.now(),
  );
  const admin = f.client();
  await admin.signIn(memberOf('admin'));
  const text = (await admin.get(`/console/w/${f.ws.workspace.slug}/leads/${id}`)).text;
  const owners = /<select id="f-owner" name="owner"[^>]*>([\s\S]*?)<\/select>/.exec(text)?.[1] ?? '';
  for (const role of ['owner', 'admin', 'manager', 'counsellor'] as const)
    t.match(owners, `value="${memberOf(role)}"`, `a ${role} may own it`);
  t.notMatch(owners, memberOf('viewer'), 'a viewer does not own leads');
  t.notMatch(owners, 'not-yet@northstar.example', 'a member who has not accepted the invitation is not offered');
  t.notMatch(owners, 'former@northstar.example', 'a deactivated member is not offered');
});

t.test('custom fields by their labels; no erase form on an erased person', async (t) => {
  const f = await consoleFixture(t);
  const id = await capture(f, {
    full_name: 'Farah Qureshi',
    phone: '+919876533333',
    custom_fields: { preferred_callback: 'evening', budget_lakhs: 25, has_offer_letter: true },
  });
  const admin = f.client();
  await admin.signIn(memberOf('admin'));
  const path = `/console/w/${f.ws.workspace.slug}/leads/${id}`;
  const page = (await admin.get(path)).text;
  t.match(page, /<dt>Preferred callback time<\/dt>\s*<dd>Evening<\/dd>/, 'a dropdown by its option label');
  t.match(page, /<dt>Budget \(lakh INR\)<\/dt>\s*<dd>25<\/dd>/);
  t.match(page, /<dt>I already have an offer letter<\/dt>\s*<dd>yes<\/dd>/);
  t.match(page, `action="${path}/erase"`, 'the erase form before erasure');
  t.equal((await admin.post(`${path}/erase`, { confirm: 'yes' })).status, 303);
  const erased = (await admin.get(`${path}?done=erased`)).text;
  t.notMatch(erased, `action="${path}/erase"`, 'no erase form once erased');
  t.match(erased, 'This person was erased');
});

t.test('a phone found as people type it: "+91 98765", "9876 543210", "98765"', async (t) => {
  const f = await consoleFixture(t);
  const id = await capture(f, { full_name: 'Zoya Ahmed', phone: '+919876543210' });
  await capture(f, { full_name: 'Other Person', phone: '+919811122233' });
  const viewer = f.client();
  await viewer.signIn(memberOf('viewer'));
  const base = `/console/w/${f.ws.workspace.slug}/leads`;
  for (const q of ['98765', '+91 98765', '9876 543210', '(98765) 43-210', '+91-98765-43210']) {
    const found = await viewer.get(`${base}?q=${encodeURIComponent(q)}`);
    t.equal(found.status, 200, q);
    t.match(found.text, `href="${base}/${id}"`, `"${q}" finds the lead`);
    t.notMatch(found.text, 'Other Person', `"${q}" finds only it`);
  }
});
