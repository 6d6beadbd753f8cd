import t, { type Test } from 'tap';
import { pauseEndpoint } from '../../src/commands/webhooks/endpoints.js';
import { NAVIGATION } from '../../src/console/layout.js';
import { can, ROLES } from '../../src/identity/permissions.js';
import { everyRole, memberOf } from '../identity/support.js';
import { seedWorkspace, TestClock } from '../support/app.js';
import { recordSql } from '../support/sql-recorder.js';
import { webhookHarness } from '../webhooks/support/harness.js';
import { ConsoleClient, PASSWORD } from './support.js';
import { ensureAccount, setPassword } from '../../src/identity/accounts.js';

// 10:00 UTC is 15:30 in India: the day there runs from 26 Nov 18:30 UTC to 27 Nov 18:30 UTC.
const NOW = new Date('2026-11-27T10:00:00Z');

/** A workspace in Asia/Kolkata with every role, its members signed up, and an endpoint to pause. */
async function fixture(t: Test) {
  const clock = new TestClock(NOW);
  const h = await webhookHarness(t, { now: clock.now, definition: { ...everyRole(), time_zone: 'Asia/Kolkata' } });
  for (const user of h.ws.workspace.settings.users) {
    const account = await ensureAccount(h.pool, user, clock.now());
    await setPassword(h.pool, account.id, PASSWORD, clock.now());
  }
  const client = async (role: (typeof ROLES)[number]) => {
    const c = new ConsoleClient(h);
    await c.signIn(memberOf(role));
    return c;
  };
  const lead = async (name: string, phone: string, patch: Record<string, unknown>) => {
    const created = await h.request('/v1/leads', {
      method: 'POST',
      key: h.ws.live,
      json: { full_name: name, phone, consent: true },
    });
    const id = ((await created.json()) as { id: string }).id;
    const changed = await h.request(`/v1/leads/${id}`, { method: 'PATCH', key: h.ws.live, json: patch });
    t.equal(changed.status, 200, `${name} patched`);
    return id;
  };
  return { h, clock, client, lead, slug: h.ws.workspace.slug };
}

t.test("Today: the member's follow-ups and tasks by the workspace's day, new leads, cases, endpoints", async (t) => {
  const { h, client, lead, slug } = await fixture(t);
  const mine = memberOf('counsellor');
  await lead('Overdue Olu', '+919811100001', { owner_email: mine, next_follow_up_at: '2026-11-26T12:00:00Z' });
  // 27 Nov 23:00 in India: still today there.
  await lead('Tonight Tara', '+919811100002', { owner_email: mine, next_follow_up_at: '2026-11-27T17:30:00Z' });
  // 28 Nov 00:30 in India (still 27 Nov in UTC): tomorrow for this workspace.
  await lead('Tomorrow Tomas', '+919811100003', { owner_email: mine, next_follow_up_at: '2026-11-27T19:00:00Z' });
  await lead('Manager Mira', '+919811100004', {
    owner_email: memberOf('manager'),
    next_follow_up_at: '2026-11-27T11:00:00Z',
  });
  await lead('Nobody Nia', '+919811100005', { owner_email: null });
  const caseLead = await lead('Case Kabir', '+919811100006', { owner_email: mine });

  const counsellor = await client('counsellor');
  const converted = await counsellor.post(`/console/w/${slug}/leads/${caseLead}/convert`, { confirm: 'yes' });
  t.equal(converted.status, 303, 'the counsellor converts their lead');
  const task = await counsellor.post(`/console/w/${slug}/tasks`, {
    lead_id: caseLead,
    title: 'Collect the passport copy',
    // Typed as India's wall time: 09:00 IST is 03:30 UTC.
    assignee: mine,
    due_at: '2026-11-27T09:00',
  });
  t.equal(task.status, 303, 'a task due this morning');

  const today = await counsellor.get(`/console/w/${slug}`);
  t.equal(today.status, 200);
  const text = today.text;
  t.match(text, /<h1>Today, 2026-11-27<\/h1>/, "the workspace's date");
  t.match(text, 'Overdue Olu');
  t.match(text, /badge-bad">overdue<\/span>\s*<a href="\/console\/w\/[^/]+\/leads\/[0-9a-f-]{36}">Overdue Olu/);
  t.match(text, 'Tonight Tara', 'due later today in India');
  t.match(text, '2026-11-27 23:00', 'shown as India’s wall time');
  t.notMatch(text, 'Tomorrow Tomas', 'tomorrow in India though today in UTC');
  t.notMatch(text, 'Manager Mira', "another member's follow-up");
  t.match(text, /Nobody Nia/, 'a new lead without an owner');
  t.match(text, /Collect the passport copy/);
  t.match(text, /datetime="2026-11-27T03:30:00.000Z" title="2026-11-27 03:30 UTC"\s*>2026-11-27 09:00 (IST|GMT\+5:30)/);
  t.match(text, /badge-bad">overdue<\/span>\s*<a href="\/console\/w\/[^/]+\/tasks\/[0-9a-f-]{36}">Collect/);
  t.match(text, /href="\/console\/w\/[^/]+\/applications\/[0-9a-f-]{36}">[A-Z0-9-]+<\/a> · Case Kabir/, 'the case');
  t.notMatch(text, 'Paused endpoints', 'a counsellor is not shown the endpoints');

  const endpoint = await h.createEndpoint({ url: h.receiver.url(), events: ['lead.created'] });
  await pauseEndpoint(h.services, endpoint.id, 7);
  const owner = await client('owner');
  const ownerToday = (await owner.get(`/console/w/${slug}`)).text;
  t.match(ownerToday, 'Paused endpoints and failing deliveries');
  t.match(ownerToday, new RegExp(`badge-bad">paused</span>\\s*<a href="/console/w/${slug}/webhooks/${endpoint.id}">`));
  t.notMatch(ownerToday, 'Overdue Olu', "the owner's own follow-ups only");
  t.match(ownerToday, 'Nobody Nia');
  const admin = await client('admin');
  t.match((await admin.get(`/console/w/${slug}`)).text, 'Paused endpoints');
  for (const role of ['manager', 'viewer'] as const) {
    const c = await client(role);
    const page = await c.get(`/console/w/${slug}`);
    t.equal(page.status, 200, `${role}: Today`);
    t.notMatch(page.text, 'Paused endpoints', `${role}: no endpoints section`);
  }
});

t.test('the navigation offers each role only the pages the permission table lets it open', async (t) => {
  const { client, slug } = await fixture(t);
  for (const role of ROLES) {
    const c = await client(role);
    const page = (await c.get(`/console/w/${slug}`)).text;
    const nav = /<nav class="primary"[\s\S]*?<\/nav>/.exec(page)?.[0] ?? '';
    for (const entry of NAVIGATION) {
      const offered = nav.includes(`>${entry.label}</a`);
      t.equal(offered, can(role, entry.operation), `${role}: ${entry.label} ${offered ? 'offered' : 'not offered'}`);
      if (!offered) continue;
      const target = await c.get(`/console/w/${slug}${entry.path}`);
      t.equal(target.status, 200, `${role}: ${entry.label} opens`);
    }
  }
});

t.test('the time zone: set by owners and admins, refused in words otherwise; forms read in it', async (t) => {
  const { client, slug } = await fixture(t);
  const admin = await client('admin');
  const settings = `/console/w/${slug}/settings`;
  t.match((await admin.get(settings)).text, /<option value="Asia\/Kolkata" selected>/);
  const bad = await admin.post(settings, { time_zone: 'Mars/Olympus' });
  t.equal(bad.status, 400);
  t.match(bad.text, /id="f-time_zone-error">Choose a time zone from the list/);
  const saved = await admin.post(settings, { time_zone: 'America/New_York' });
  t.equal(saved.status, 303);
  t.equal(saved.headers.get('location'), `${settings}?saved=time_zone`);
  t.match((await admin.get(`${settings}?saved=time_zone`)).text, 'times are now shown and read in America/New_York');
  // 10:00 UTC is 05:00 in New York.
  t.match(
    (await admin.get(`/console/w/${slug}`)).text,
    /It is <time datetime="2026-11-27T10:00:00.000Z"[^>]*>2026-11-27 05:00 (EST|GMT-5)/,
  );
  for (const role of ['manager', 'counsellor', 'viewer'] as const) {
    const c = await client(role);
    t.equal((await c.get(settings)).status, 403, `${role}: the settings page is refused`);
    t.equal((await c.post(settings, { time_zone: 'UTC' })).status, 403, `${role}: saving is refused`);
  }
});

t.test("the header's switcher lists the member's other workspaces, and only theirs", async (t) => {
  const { h, client, slug } = await fixture(t);
  const second = await seedWorkspace(h, { ...everyRole(), name: 'Second office' });
  const elsewhere = await seedWorkspace(h, { name: 'Not theirs' });
  const c = await client('counsellor');
  const header = /<header class="top">[\s\S]*?<\/header>/.exec((await c.get(`/console/w/${slug}/leads`)).text)?.[0];
  t.match(header, `<a href="/console/w/${second.workspace.slug}">Second office</a>`, 'the other workspace');
  t.notMatch(header, elsewhere.workspace.slug, 'a workspace they are not a member of');
  t.match(header, 'href="/console/account"', "the member's menu: account");
  t.match(header, 'action="/console/sign-out"', "the member's menu: sign out");
});

t.test("Today's reads and the switcher's go through their indexes (migration 150)", async (t) => {
  const { h, client, slug } = await fixture(t);
  const sent = recordSql(t);
  const c = await client('owner');
  t.equal((await c.get(`/console/w/${slug}`)).status, 200);
  const explained = async (pattern: RegExp) => {
    const statement = sent.find((s) => pattern.test(s.text));
    if (!statement) return `no statement matches ${pattern}`;
    const db = await h.pool.connect();
    try {
      await db.query('BEGIN');
      // A fresh workspace makes a sequential scan cheapest; the question is whether the index can answer at all.
      await db.query('SET LOCAL enable_seqscan = off');
      const plan = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${statement.text}`, statement.values);
      await db.query('ROLLBACK');
      return plan.rows.map((r) => r['QUERY PLAN']).join('\n');
    } finally {
      db.release();
    }
  };
  t.match(await explained(/FROM tasks t/), /tasks_open_by_assignee/, 'my open tasks');
  t.match(await explained(/owner_id IS NULL AND converted = false/), /leads_unowned_by_creation/, 'unowned leads');
  t.match(await explained(/SELECT slug, name FROM workspaces/), /workspaces_users/, "the member's workspaces");
});
