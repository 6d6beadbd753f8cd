import t from 'tap';
import { recordNotificationsBatch } from '../../src/notifications/record.js';
import { memberOf } from '../identity/support.js';
import { TestClock } from '../support/app.js';
import { capture, notifyFixture, statementCounter } from './support.js';

// A task.changed tells its new assignee, and nobody when the assignee stays: the subscriber needs each change's
// assignee before it, which it reads for a whole batch in one statement, each change getting the one before its own.

t.test('changes of one task in one batch: each new assignee told once, an unchanged one not at all', async (t) => {
  const clock = new TestClock(new Date('2026-11-01T10:00:00.000Z'));
  const f = await notifyFixture(t, clock);
  const slug = f.ws.workspace.slug;
  const userId = (email: string) => f.ws.workspace.settings.users.find((u) => u.email === email)!.id;
  const counsellor = memberOf('counsellor');
  const manager = memberOf('manager');
  const leadId = await capture(f, { full_name: 'Harleen Gill', phone: '+919811100061' });
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  const due = '2026-11-02T10:00';
  t.equal(
    (
      await owner.post(`/console/w/${slug}/tasks`, {
        lead_id: leadId,
        title: 'Ask for the bank letter',
        assignee: counsellor,
        due_at: due,
      })
    ).status,
    303,
  );
  const task = await f.app.pool.query<{ id: string }>('SELECT id FROM tasks WHERE tenant_id = $1', [f.ws.workspace.id]);
  const taskId = task.rows[0]!.id;
  const change = async (title: string, assignee: string) =>
    t.equal((await owner.post(`/console/w/${slug}/tasks/${taskId}`, { title, assignee, due_at: due })).status, 303);
  await change('Ask for the bank letter, stamped', counsellor); // the same assignee: news to nobody
  await change('Ask for the bank letter, stamped', manager);
  await change('Ask for the bank letter, stamped', counsellor);

  const counted = statementCounter(f.app.pool);
  let read = { result: { events: 0, recorded: 0, busy: false }, statements: [] as string[] };
  for (let tries = 0; tries < 400 && read.result.events < 5; tries += 1) {
    await f.app.pool.query(
      `UPDATE subscription_checkpoints SET tx_id = '0', position = 0 WHERE name = 'member-notifications'`,
    );
    read = await counted(() => recordNotificationsBatch(f.app.pool, f.app.services.personalData, clock.now()));
    if (read.result.events < 5) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.ok(read.result.events >= 5, 'one batch read the lead, the task and its three changes');
  const told = await f.app.pool.query<{ user_id: string }>(
    `SELECT user_id FROM member_notifications WHERE kind = 'task_assigned' AND subject_id = $1 ORDER BY created_at, user_id`,
    [taskId],
  );
  t.same(
    told.rows.map((row) => row.user_id).sort(),
    [userId(counsellor), userId(counsellor), userId(manager)].sort(),
    'the counsellor at creation and when given it back, the manager when given it; the title change told nobody',
  );
  t.equal(
    read.statements.filter((s) => /'task\.created', 'task\.changed'/.test(s)).length,
    1,
    'the assignees before the three changes read in one statement',
  );
});
