import t from 'tap';
import { fireDueTimers } from '../../src/commands/tasks/fire-timers.js';
import { memberOf } from '../identity/support.js';
import { TestClock } from '../support/app.js';
import { capture, mailTo, notifyFixture, pausedEndpoint, rawHeader } from './support.js';

t.test('each kind mailed at once through SMTP on loopback, with the one-click unsubscribe headers', async (t) => {
  const clock = new TestClock(new Date('2026-11-01T10:00:00.000Z'));
  const f = await notifyFixture(t, clock);
  const slug = f.ws.workspace.slug;
  const counsellor = memberOf('counsellor');

  // A lead captured through the API goes to the branch's counsellor by auto-assignment.
  const leadId = await capture(f, { full_name: 'Gurpreet Sandhu', phone: '+919811100044' });
  await f.pump();
  const assigned = mailTo(f.smtp, counsellor);
  t.equal(assigned.length, 1, 'one mail for the lead assigned');
  t.match(assigned[0]!.mail.subject, /^A lead was assigned to you · /);
  t.match(assigned[0]!.mail.text, 'Lead assigned to you: Gurpreet Sandhu');
  t.match(assigned[0]!.mail.text, `${f.app.baseUrl}/console/w/${slug}/leads/${leadId}`);
  t.match(rawHeader(assigned[0]!, 'list-unsubscribe'), new RegExp(`^<${f.app.baseUrl}/console/unsubscribe/${slug}/`));
  t.equal(rawHeader(assigned[0]!, 'list-unsubscribe-post'), 'List-Unsubscribe=One-Click');
  t.match(rawHeader(assigned[0]!, 'message-id'), /^<notification-[0-9a-f-]{36}@127\.0\.0\.1>$/);

  // The manager gives the counsellor a task and a follow-up; nobody hears of what they did themselves.
  const manager = f.client();
  await manager.signIn(memberOf('manager'));
  const made = await manager.post(`/console/w/${slug}/tasks`, {
    lead_id: leadId,
    title: 'Call back about IELTS',
    assignee: counsellor,
    due_at: '2026-11-01T10:20',
  });
  t.equal(made.status, 303);
  const followUp = await manager.post(`/console/w/${slug}/leads/${leadId}`, {
    stage: 'new',
    owner: counsellor,
    follow_up: '2026-11-01T10:30',
  });
  t.equal(followUp.status, 303, 'follow-up set');
  await f.pump();
  t.same(
    mailTo(f.smtp, counsellor).map((m) => m.mail.subject?.split(' · ')[0]),
    ['A lead was assigned to you', 'A task was assigned to you'],
    'the task at once; a follow-up not yet due says nothing',
  );
  t.match(
    mailTo(f.smtp, counsellor)[1]!.mail.text,
    'Task assigned to you: Call back about IELTS, due 2026-11-01 10:20',
  );
  t.equal(mailTo(f.smtp, memberOf('manager')).length, 0, 'the manager is told nothing of their own acts');

  // Time passes: the task goes overdue (its durable timer) and the follow-up falls due.
  clock.advance(35 * 60_000);
  await fireDueTimers(f.app.pool, f.app.services.store, clock.now());
  await f.pump();
  const later = mailTo(f.smtp, counsellor).slice(2);
  t.same(
    later.map((m) => m.mail.subject?.split(' · ')[0]).sort(),
    ['A follow-up is due', 'Your task is overdue'],
    'overdue and follow-up, once each',
  );
  t.match(later.find((m) => /follow-up/.test(m.mail.subject ?? ''))!.mail.text, 'Follow-up due: Gurpreet Sandhu');

  // An endpoint pauses: the admin hears at once; the owner has the owner notice instead; other roles nothing.
  await pausedEndpoint(f);
  await f.pump();
  const admin = mailTo(f.smtp, memberOf('admin'));
  t.equal(admin.length, 1, 'the admin is told');
  t.match(admin[0]!.mail.text, 'Webhook endpoint paused: https://127.0.0.1:9/hooks');
  t.notMatch(admin[0]!.mail.text, 'secret-in-query', 'no query string (receivers put tokens there)');
  for (const role of ['owner', 'manager', 'viewer'] as const)
    t.equal(mailTo(f.smtp, memberOf(role)).length, 0, `no notification mail to the ${role}`);

  // Nothing is mailed twice: another pass finds nothing to send.
  const before = f.smtp.received.length;
  await f.pump();
  t.equal(f.smtp.received.length, before, 'a second pass sends nothing');

  // Today counts what is new for the counsellor, and marking it seen clears the count.
  const c = f.client();
  await c.signIn(counsellor);
  const today = await c.get(`/console/w/${slug}`);
  t.match(today.text, /New for me <span class="count">\(4\)<\/span>/);
  const page = await c.get(`/console/w/${slug}/notifications`);
  const shownAt = /name="shown_at" value="([^"]+)"/.exec(page.text)![1]!;
  t.equal((await c.post(`/console/w/${slug}/notifications/seen`, { shown_at: shownAt })).status, 303);
  t.match((await c.get(`/console/w/${slug}`)).text, /New for me <span class="count">\(0\)<\/span>/);
});
