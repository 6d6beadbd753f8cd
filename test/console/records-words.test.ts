import t from 'tap';
import { memberOf } from '../identity/support.js';
import { consoleFixture } from './support.js';

type Fixture = Awaited<ReturnType<typeof consoleFixture>>;

async function capture(f: Fixture, name: string, phone: string): Promise<string> {
  const response = await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { full_name: name, phone, consent: true },
  });
  return ((await response.json()) as { id: string }).id;
}

t.test(
  'tasks: named by their person or case; a message after each action; a change keeps what it does not hold',
  async (t) => {
    const f = await consoleFixture(t);
    const leadId = await capture(f, 'Tara Singh', '+919811100055');
    const c = f.client();
    await c.signIn(memberOf('counsellor'));
    const w = `/console/w/${f.ws.workspace.slug}`;
    const converted = await c.post(`${w}/leads/${leadId}/convert`, { confirm: 'yes' });
    const applicationId = /applications\/([0-9a-f-]{36})/.exec(converted.headers.get('location')!)![1]!;
    const caseRef = /<h1>Application ([^<]+)<\/h1>/.exec((await c.get(`${w}/applications/${applicationId}`)).text)![1]!;

    const created = await c.post(`${w}/tasks`, {
      application_id: applicationId,
      title: 'Book the biometrics slot',
      assignee: memberOf('counsellor'),
      due_at: '2026-12-02T10:00',
    });
    t.equal(created.status, 303);
    t.match(created.headers.get('location'), /done=created/);
    const list = await c.get(created.headers.get('location')!);
    t.match(list.text, 'The task was created.');
    t.match(list.text, `>${caseRef} · Tara Singh</a>`, 'the case number and the person, not "the application"');
    t.notMatch(list.text, '>the application<');
    const mine = await c.get(`${w}/tasks?show=mine`);
    t.match(mine.text, `>${caseRef} · Tara Singh</a>`);

    const taskId = /tasks\/([0-9a-f-]{36})">Book the biometrics slot/.exec(mine.text)![1]!;
    const completed = await c.post(`${w}/tasks/${taskId}/complete`, {});
    t.match(completed.headers.get('location'), /done=completed/);
    t.match((await c.get(completed.headers.get('location')!)).text, 'The task was completed.');
    const reopened = await c.post(`${w}/tasks/${taskId}/reopen`, {});
    t.match((await c.get(reopened.headers.get('location')!)).text, 'The task was reopened.');

    const renamed = await c.post(`${w}/tasks/${taskId}`, { title: 'Book the biometrics slot in Delhi' });
    t.equal(renamed.status, 303, 'a form of the title alone');
    const page = (await c.get(`${w}/tasks/${taskId}`)).text;
    t.match(page, 'Book the biometrics slot in Delhi');
    t.match(page, /<option value="counsellor@northstar.example" selected>/, 'the assignee is kept');
    t.match(page, 'value="2026-12-02T10:00"', 'the due time is kept');
  },
);

t.test('invoices: named by their person; a refund and its payment asked first', async (t) => {
  const f = await consoleFixture(t);
  const leadId = await capture(f, 'Kabir Joshi', '+919811100066');
  const manager = f.client();
  await manager.signIn(memberOf('manager'));
  const base = `/console/w/${f.ws.workspace.slug}/invoices`;
  const issued = await manager.post(base, {
    lead_id: leadId,
    currency: 'INR',
    description: 'Counselling fee',
    quantity: '1',
    unit_amount: '5000',
    tax_percent: '0',
    due_date: '2026-12-20',
  });
  t.equal(issued.status, 303);
  const path = new URL(issued.headers.get('location')!, f.app.baseUrl).pathname;
  const invoice = (await manager.get(`${path}?done=issued`)).text;
  t.match(invoice, 'The invoice was issued.');
  t.match(invoice, `>Kabir Joshi</a>`, 'for the person, not "the lead"');
  t.match((await manager.get(`${base}?lead=${leadId}`)).text, /<caption>\s*Invoices of Kabir Joshi/);
  t.match((await manager.get(base)).text, '>Kabir Joshi</a>');

  t.equal((await manager.post(`${path}/payments`, { amount: '5000', method: 'cash' })).status, 303);
  const paid = (await manager.get(`${path}?done=paid`)).text;
  t.match(paid, 'The payment was recorded.');
  const paymentId = /payments\/([0-9a-f-]{36})\/refunds/.exec(paid)![1]!;

  const asked = await manager.get(`${path}/payments/${paymentId}/refunds?amount=1,000&reason=Visa+refused`);
  t.equal(asked.status, 200, 'the refund form leads to a page that asks');
  t.match(asked.text, /<h1>Refund ₹1,000.00 on invoice [^<]+<\/h1>/);
  t.match(asked.text, 'name="confirm" value="yes"');
  t.match((await manager.get(path)).text, /<dd id="balance">₹0.00<\/dd>/, 'asking changed nothing');
  const unconfirmed = await manager.post(`${path}/payments/${paymentId}/refunds`, { amount: '1,000' });
  t.equal(unconfirmed.status, 400, 'a refund posted without the confirmation is asked again');
  t.match(unconfirmed.text, 'Nothing was refunded yet');
  const badAmount = await manager.get(`${path}/payments/${paymentId}/refunds?amount=lots`);
  t.equal(badAmount.status, 400);
  t.match(badAmount.text, new RegExp(`id="refund-${paymentId}-error">Enter an amount`));

  const refunded = await manager.post(`${path}/payments/${paymentId}/refunds`, {
    amount: '1,000',
    reason: 'Visa refused',
    confirm: 'yes',
  });
  t.equal(refunded.status, 303);
  const after = (await manager.get(`${path}?done=refunded`)).text;
  t.match(after, 'The refund was recorded');
  const refundId = /refunds\/([0-9a-f-]{36})\/paid/.exec(after)![1]!;
  const markAsked = await manager.get(`${path}/refunds/${refundId}/paid`);
  t.equal(markAsked.status, 200);
  t.match(markAsked.text, /A\s+paid refund cannot be reopened\./);
  t.equal((await manager.post(`${path}/refunds/${refundId}/paid`, {})).status, 400, 'not without the confirmation');
  t.equal((await manager.post(`${path}/refunds/${refundId}/paid`, { confirm: 'yes' })).status, 303);
  t.equal((await manager.get(`${path}/refunds/${refundId}/paid`)).status, 404, 'a paid refund is asked no more');
});

t.test(
  'an outcome is recorded only after its own page asks; statuses in words; Restore only where removed',
  async (t) => {
    const f = await consoleFixture(t);
    const leadId = await capture(f, 'Nisha Verma', '+919811100077');
    const c = f.client();
    await c.signIn(memberOf('counsellor'));
    const w = `/console/w/${f.ws.workspace.slug}`;
    const lead = (await c.get(`${w}/leads/${leadId}`)).text;
    t.match(lead, `href="${w}/leads/${leadId}/convert"`, 'converting starts with a link to its step');
    const step = await c.get(`${w}/leads/${leadId}/convert`);
    t.match(step.text, 'A conversion cannot be undone.');
    const converted = await c.post(`${w}/leads/${leadId}/convert`, { confirm: 'yes' });
    const path = new URL(converted.headers.get('location')!, f.app.baseUrl).pathname;
    const page = (await c.get(path)).text;
    t.match(page, `<form method="get" action="${path}/outcome">`, 'the outcome form leads to its step');
    t.notMatch(page, 'Restore', 'no module was removed, so none is offered to restore');
    // A required module switched off (as the API may) is the one a Restore brings back.
    t.equal((await c.post(`${path}/modules/profile_review/deselect`, {})).status, 303);
    const removed = (await c.get(`${path}?done=module`)).text;
    t.match(removed, 'The module was changed.');
    t.match(removed, `action="${path}/modules/profile_review/restore"`, 'Restore is offered on the removed module');
    t.equal((await c.post(`${path}/modules/profile_review/restore`, {})).status, 303);
    t.notMatch((await c.get(path)).text, 'Restore', 'and no more once restored');
    t.match(page, '<option value="on_hold" >on hold</option>');

    const asked = await c.get(`${path}/outcome?outcome=granted`);
    t.equal(asked.status, 200);
    t.match(asked.text, /<h1>Record the outcome of [^<]+<\/h1>/);
    t.match(asked.text, 'will be recorded as granted');
    t.match((await c.get(path)).text, /<dt>Outcome<\/dt>\s*<dd>—<\/dd>/, 'asking recorded nothing');
    const unconfirmed = await c.post(`${path}/outcome`, { outcome: 'granted' });
    t.equal(unconfirmed.status, 400);
    t.match(unconfirmed.text, 'Nothing was recorded yet');
    const recorded = await c.post(`${path}/outcome`, { outcome: 'granted', confirm: 'yes' });
    t.equal(recorded.status, 303);
    t.match(recorded.headers.get('location'), /done=outcome$/);
    const after = (await c.get(recorded.headers.get('location')!)).text;
    t.match(after, 'The outcome was recorded.');
    t.match(after, /<dt>Outcome<\/dt>\s*<dd>granted<\/dd>/);

    const closed = await c.post(`${path}/status`, { status: 'closed' });
    t.equal(closed.status, 303);
    const refused = await c.post(`${path}/stage`, { stage: 'documents' });
    t.equal(refused.status, 409);
    t.match(refused.text, 'This case is closed: set its status to active or on hold before changing it.');
    t.notMatch(refused.text, 'on_hold first', 'no status key in the message');
  },
);

t.test('staff words: refusals and permission refusals name no API field or technique', async (t) => {
  const f = await consoleFixture(t);
  const leadId = await capture(f, 'Dev Malhotra', '+919811100088');
  const c = f.client();
  await c.signIn(memberOf('counsellor'));
  const path = `/console/w/${f.ws.workspace.slug}/leads/${leadId}`;
  const lost = await c.post(path, { stage: 'lost' });
  t.equal(lost.status, 400);
  t.match(lost.text, 'Choose a lost reason');
  t.notMatch(lost.text, 'lost_reason_key');
  const erase = await c.post(`${path}/erase`, { confirm: 'yes' });
  t.equal(erase.status, 403);
  t.notMatch(erase.text, 'crypto-shredding');
  const viewer = f.client();
  await viewer.signIn(memberOf('viewer'));
  const change = await viewer.post(path, { note: 'x' });
  t.equal(change.status, 403);
  t.notMatch(change.text, /the rules of patch/i);
});
