import fc from 'fast-check';
import t from 'tap';
import { recordNotificationsBatch } from '../../src/notifications/record.js';
import { memberOf } from '../identity/support.js';
import { TestClock } from '../support/app.js';
import { checkProperty } from '../support/properties.js';
import { caughtUp, notifyFixture, otherWorkspace } from './support.js';

/*
 * The subscriber reads each batch's workspaces once and writes the batch's notifications in one statement. Whatever
 * the batches' sizes, and with several recorders racing for the checkpoint, the same notifications must come out as
 * when events are read one at a time: each lead's counsellor told once, in the lead's own workspace, each task's new
 * assignee once per time it changed hands (its assignee before each change read per batch), nobody else.
 */
t.test('any batch sizes and racing recorders record each notification once, in its own workspace', async (t) => {
  const clock = new TestClock(new Date('2026-11-01T10:00:00.000Z'));
  const f = await notifyFixture(t, clock);
  const ws = f.ws.workspace;
  const other = await otherWorkspace(f);
  const counsellorOf = (users: typeof ws.settings.users, email: string) => users.find((u) => u.email === email)!.id;
  const expected: string[] = [];
  // Leads of both workspaces, interleaved, each auto-assigned to its branch's counsellor.
  for (let i = 0; i < 5; i += 1) {
    for (const [key, tenant, counsellor] of [
      [f.ws.live, ws.id, counsellorOf(ws.settings.users, memberOf('counsellor'))],
      [other.live, other.workspace.id, counsellorOf(other.workspace.settings.users, 'counsellor@elsewhere.example')],
    ] as const) {
      const response = await f.app.request('/v1/leads', {
        method: 'POST',
        key,
        json: {
          consent: true,
          full_name: 'Batch Property',
          phone: `+9198111009${expected.length.toString().padStart(2, '0')}`,
        },
      });
      t.equal(response.status, 201);
      expected.push(`lead_assigned ${tenant} ${counsellor} ${((await response.json()) as { id: string }).id}`);
    }
  }
  // Tasks on this workspace's first lead, given and given back: each change's assignee before it may lie in the same
  // batch or an earlier one, and a change that keeps the assignee tells nobody.
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  const firstLead = expected[0]!.split(' ')[3]!;
  const userOf = (role: 'counsellor' | 'manager') => ({
    email: memberOf(role),
    id: counsellorOf(ws.settings.users, memberOf(role)),
  });
  const due = '2026-11-02T10:00';
  const tasks: string[] = [];
  for (const title of ['Bank letter', 'Passport copy']) {
    const made = await owner.post(`/console/w/${ws.slug}/tasks`, {
      lead_id: firstLead,
      title,
      assignee: userOf('counsellor').email,
      due_at: due,
    });
    t.equal(made.status, 303);
    const ids = await f.app.pool.query<{ id: string }>('SELECT id FROM tasks WHERE tenant_id = $1', [ws.id]);
    const id = ids.rows.map((row) => row.id).find((candidate) => !tasks.includes(candidate))!;
    tasks.push(id);
    expected.push(`task_assigned ${ws.id} ${userOf('counsellor').id} ${id}`);
  }
  const changes: [number, 'counsellor' | 'manager', string][] = [
    [0, 'manager', 'Bank letter, stamped'],
    [1, 'counsellor', 'Passport copy, both pages'],
    [0, 'manager', 'Bank letter, stamped twice'],
    [1, 'manager', 'Passport copy, both pages'],
    [0, 'counsellor', 'Bank letter, stamped twice'],
  ];
  const assignee = ['counsellor', 'counsellor'];
  for (const [task, role, title] of changes) {
    const changed = await owner.post(`/console/w/${ws.slug}/tasks/${tasks[task]}`, {
      title,
      assignee: userOf(role).email,
      due_at: due,
    });
    t.equal(changed.status, 303);
    if (assignee[task] !== role) expected.push(`task_assigned ${ws.id} ${userOf(role).id} ${tasks[task]}`);
    assignee[task] = role;
  }
  // Once every capture is settled (readable by the subscriber), each run replays the log from its start.
  await caughtUp(f, () => f.recorder.runOnce());
  const { pool } = f.app;
  const keys = f.app.services.personalData;

  /** One recorder: batches of the given sizes in turn, until it has read the log to its end. */
  const recorder = async (sizes: readonly number[]) => {
    for (let i = 0; ; i += 1) {
      const step = await recordNotificationsBatch(pool, keys, clock.now(), sizes[i % sizes.length]);
      if (step.busy) await new Promise((resolve) => setImmediate(resolve));
      else if (step.events === 0) return;
    }
  };
  await checkProperty(
    t,
    'batched recording equals one event at a time',
    fc.asyncProperty(
      fc.array(fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 4 }), {
        minLength: 1,
        maxLength: 3,
      }),
      async (recorders) => {
        await pool.query('DELETE FROM member_notifications');
        await pool.query(
          `UPDATE subscription_checkpoints SET tx_id = '0', position = 0 WHERE name = 'member-notifications'`,
        );
        await Promise.all(recorders.map((sizes) => recorder(sizes)));
        const rows = await pool.query<{ told: string }>(
          `SELECT kind || ' ' || tenant_id || ' ' || user_id || ' ' || subject_id AS told FROM member_notifications
            ORDER BY 1`,
        );
        return JSON.stringify(rows.rows.map((r) => r.told)) === JSON.stringify([...expected].sort());
      },
    ),
    25,
  );
});
