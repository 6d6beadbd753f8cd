import t from 'tap';
import { ensureAccount, setPassword } from '../../src/identity/accounts.js';
import { fanOutBatch } from '../../src/subscribers/webhook-fanout.js';
import { findWorkspace } from '../../src/workspaces/repository.js';
import { memberOf } from '../identity/support.js';
import { pausedEndpoint } from '../notifications/support.js';
import { seedWorkspace, startApp, type TestApp } from '../support/app.js';
import { consoleFixture, ConsoleClient, PASSWORD } from './support.js';

async function capture(f: { app: Pick<TestApp, 'request'> }, key: string, lead: object) {
  return f.app.request('/v1/leads', { method: 'POST', key, json: { consent: true, ...lead } });
}

t.test('a sign-in lands on Today for a member of one workspace, on the list for a member of two', async (t) => {
  const f = await consoleFixture(t);
  const c = f.client();
  const signedIn = await c.signIn(memberOf('counsellor'));
  t.equal(signedIn.status, 303);
  const landing = await c.get(signedIn.headers.get('location')!);
  t.equal(landing.status, 303);
  t.equal(landing.headers.get('location'), `/console/w/${f.ws.workspace.slug}`, 'straight to Today');
  t.equal((await c.get('/console')).status, 200, 'the workspace list itself still opens');

  await seedWorkspace(f.app, {
    users: [
      { name: 'Second owner', email: 'owner@second.example', role: 'owner', branch: 'DEL' },
      { name: 'The manager', email: memberOf('manager'), role: 'counsellor', branch: 'DEL' },
    ],
  });
  const m = f.client();
  const two = await m.signIn(memberOf('manager'));
  const choosing = await m.get(two.headers.get('location')!);
  t.equal(choosing.status, 303);
  t.equal(choosing.headers.get('location'), '/console', 'the workspace list, at its own address');
  const list = await m.get('/console');
  t.equal(list.status, 200, 'a member of two workspaces chooses');
  t.match(list.text, 'Your workspaces');
});

t.test('the invite form keeps what was typed after an error and takes a branch', async (t) => {
  const f = await consoleFixture(t);
  const c = f.client();
  await c.signIn(memberOf('admin'));
  const base = `/console/w/${f.ws.workspace.slug}/members`;
  const blr = f.ws.workspace.settings.branches.find((b) => b.code === 'BLR')!;
  const refused = await c.post(`${base}/invite`, {
    name: 'Priya Sharma',
    email: 'not an email',
    role: 'manager',
    branch: blr.id,
  });
  t.equal(refused.status, 400);
  t.match(refused.text, /id="f-email-error">Enter an email address/);
  t.match(refused.text, /name="name"[^>]*value="Priya Sharma"|value="Priya Sharma"[^>]*name="name"/, 'the name kept');
  t.match(refused.text, /value="not an email"/, 'the email kept');
  t.match(refused.text, new RegExp(`<option value="${blr.id}"\\s+selected`), 'the branch kept');
  t.match(refused.text, /<option value="manager"\s+selected/, 'the role kept');
  const bad = await c.post(`${base}/invite`, {
    name: 'Priya Sharma',
    email: 'priya@northstar.example',
    role: 'manager',
    branch: 'nowhere',
  });
  t.equal(bad.status, 400);
  t.match(bad.text, /id="f-branch-error">Choose a branch from the list/);
  const invited = await c.post(`${base}/invite`, {
    name: 'Priya Sharma',
    email: 'priya@northstar.example',
    role: 'manager',
    branch: blr.id,
  });
  t.ok([201, 303].includes(invited.status), `invited: ${invited.status}`);
  const ws = await findWorkspace(f.app.pool, f.ws.workspace.id);
  t.equal(ws!.settings.users.find((u) => u.email === 'priya@northstar.example')?.branch_id, blr.id, 'in that branch');
});

t.test('auto-assignment passes over members who cannot sign in; Settings and Members say so', async (t) => {
  const app = await startApp(t, { config: { adminToken: 'operator-token-for-console-tests-0123456789' } });
  const ws = await seedWorkspace(app, {
    users: [
      { name: 'Owner', email: 'owner@northstar.example', role: 'owner', branch: 'DEL' },
      { name: 'Signed up', email: 'ready@northstar.example', role: 'counsellor', branch: 'DEL' },
      { name: 'Never signed in', email: 'later@northstar.example', role: 'counsellor', branch: 'DEL' },
    ],
  });
  for (const email of ['owner@northstar.example', 'ready@northstar.example']) {
    const user = ws.workspace.settings.users.find((u) => u.email === email)!;
    const account = await ensureAccount(app.pool, user, app.services.now());
    await setPassword(app.pool, account.id, PASSWORD, app.services.now());
  }
  const owners = new Map<string, number>();
  for (let i = 0; i < 12; i += 1) {
    const answer = await capture({ app }, ws.live, { full_name: `Walk-in ${i}`, phone: `+9198111000${10 + i}` });
    const lead = (await (
      await app.request(`/v1/leads/${((await answer.json()) as { id: string }).id}`, { key: ws.live })
    ).json()) as {
      owner: { email: string } | null;
    };
    const owner = lead.owner?.email ?? 'none';
    owners.set(owner, (owners.get(owner) ?? 0) + 1);
  }
  t.same([...owners], [['ready@northstar.example', 12]], 'every new lead to the counsellor who can sign in');
  const c = new ConsoleClient(app);
  await c.signIn('owner@northstar.example');
  const settings = await c.get(`/console/w/${ws.workspace.slug}/settings`);
  t.match(settings.text, 'Members who cannot sign in yet');
  t.match(
    settings.text,
    /Not given new leads now, until they can sign in:[\s\S]*Never signed in \(later@northstar\.example, counsellor\)/,
  );
  const members = await c.get(`/console/w/${ws.workspace.slug}/members`);
  const rowOf = (email: string) =>
    members.text
      .split('<tr')
      .find((r) => r.includes(email))
      ?.split('</tr>')[0] ?? '';
  const row = rowOf('later@northstar.example');
  t.match(row, 'gets no new leads until they can sign in');
  const ready = rowOf('ready@northstar.example');
  t.match(ready, 'ready@northstar.example');
  t.notMatch(ready, 'gets no new leads');
});

t.test('an invoice takes several item lines in the console', async (t) => {
  const f = await consoleFixture(t);
  const created = await capture(f, f.ws.live, { full_name: 'Imran Ali', phone: '+919811177788' });
  const leadId = ((await created.json()) as { id: string }).id;
  const c = f.client();
  await c.signIn(memberOf('manager'));
  const base = `/console/w/${f.ws.workspace.slug}/invoices`;
  const form = {
    lead_id: leadId,
    currency: 'INR',
    description: 'Counselling package',
    quantity: '1',
    unit_amount: '10,000',
    description_2: 'Visa filing',
    quantity_2: '2',
    unit_amount_2: '2,500.50',
    description_3: 'Courier',
    unit_amount_3: '500',
    tax_percent: '0',
    due_date: '2026-12-15',
  };
  const bad = await c.post(base, { ...form, quantity_2: 'two' });
  t.equal(bad.status, 400);
  t.match(bad.text, /id="f-quantity_2-error">Enter a whole number/);
  t.match(bad.text, /value="Visa filing"/, 'the lines kept');
  const issued = await c.post(base, form);
  t.equal(issued.status, 303);
  const invoice = await c.get(new URL(issued.headers.get('location')!, f.app.baseUrl).pathname);
  for (const item of ['Counselling package', 'Visa filing', 'Courier']) t.match(invoice.text, `<td>${item}</td>`);
  t.match(invoice.text, /<dd id="total">₹15,501.00<\/dd>/, '10,000 + 2 × 2,500.50 + 500 (a blank quantity is 1)');
});

t.test('Today and the endpoint page say a paused endpoint’s held deliveries in the same words', async (t) => {
  const f = await consoleFixture(t, { config: { webhookAllowLoopback: true } });
  const endpointId = await pausedEndpoint(f);
  for (const i of [1, 2]) await capture(f, f.ws.live, { full_name: `Held ${i}`, phone: `+91981110009${i}` });
  for (let tries = 0; tries < 100; tries += 1) {
    await fanOutBatch(f.app.pool, f.app.services.personalData, f.app.services.now());
    const n = await f.app.pool.query("SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending'", [
      endpointId,
    ]);
    if (n.rowCount === 2) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const c = f.client();
  await c.signIn(memberOf('admin'));
  const words = '2 deliveries waiting for the endpoint to resume';
  t.match((await c.get(`/console/w/${f.ws.workspace.slug}`)).text, words, 'Today');
  t.match((await c.get(`/console/w/${f.ws.workspace.slug}/webhooks/${endpointId}`)).text, words, 'the endpoint page');
});
