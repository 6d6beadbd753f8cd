import t from 'tap';
import { memberOf } from '../identity/support.js';
import { TestClock } from '../support/app.js';
import { consoleFixture } from './support.js';

t.test('tasks: create on a lead, mine, overdue, change, complete and reopen; refusals by their fields', async (t) => {
  const clock = new TestClock();
  const f = await consoleFixture(t, { clock });
  const created = await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { full_name: 'Sana Khan', phone: '+919811100044', consent: true },
  });
  const leadId = ((await created.json()) as { id: string }).id;
  const c = f.client();
  await c.signIn(memberOf('counsellor'));
  const base = `/console/w/${f.ws.workspace.slug}/tasks`;
  const leadTasks = await c.get(`${base}?lead=${leadId}`);
  t.match(leadTasks.text, 'New task');
  const noTitle = await c.post(base, { lead_id: leadId, title: '', due_at: '2026-11-02T09:00' });
  t.equal(noTitle.status, 400);
  t.match(noTitle.text, /id="f-title-error">Enter a title/);
  const badDue = await c.post(base, { lead_id: leadId, title: 'Call back', due_at: 'tomorrow' });
  t.match(badDue.text, /id="f-due_at-error">Enter a date and time/);
  const ok = await c.post(base, {
    lead_id: leadId,
    title: 'Call back about IELTS',
    assignee: memberOf('counsellor'),
    due_at: '2026-11-01T10:20',
  });
  t.equal(ok.status, 303);
  t.match((await c.get(`${base}?lead=${leadId}`)).text, 'Call back about IELTS');
  t.match((await c.get(`${base}?show=mine`)).text, 'Call back about IELTS', 'assigned to me');
  t.notMatch((await c.get(`${base}?show=overdue`)).text, 'Call back about IELTS', 'not due yet');
  clock.advance(25 * 60_000); // within the session's idle time
  const overdue = await c.get(`${base}?show=overdue`);
  t.match(overdue.text, 'Call back about IELTS', 'past due and open');
  const taskId = new RegExp(`href="${base}/([0-9a-f-]{36})">Call back`).exec(overdue.text)![1]!;
  const changed = await c.post(`${base}/${taskId}`, {
    title: 'Call back about PTE',
    assignee: memberOf('manager'),
    due_at: '2026-11-03T09:00',
  });
  t.equal(changed.status, 303);
  const page = await c.get(`${base}/${taskId}?done=changed`);
  t.match(page.text, 'The task was saved.');
  t.match(page.text, 'Call back about PTE');
  t.notMatch((await c.get(`${base}?show=mine`)).text, 'Call back about PTE', 'now the manager’s');
  t.equal((await c.post(`${base}/${taskId}/complete`, {})).status, 303);
  t.match((await c.get(`${base}?lead=${leadId}`)).text, /<td>completed<\/td>/);
  const twice = await c.post(`${base}/${taskId}/complete`, {});
  t.ok(twice.status === 303 || twice.status === 409, `completing twice: ${twice.status}`);
  t.equal((await c.post(`${base}/${taskId}/reopen`, {})).status, 303);
  t.match((await c.get(`${base}?lead=${leadId}`)).text, /<td>open<\/td>/);
  const viewer = f.client();
  await viewer.signIn(memberOf('viewer'));
  t.equal((await viewer.get(`${base}?lead=${leadId}`)).status, 200);
  t.equal((await viewer.post(`${base}/${taskId}/complete`, {})).status, 403);
});
