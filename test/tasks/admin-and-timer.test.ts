import { pino } from 'pino';
import t from 'tap';
import { createServices } from '../../src/bootstrap.js';
import { fireDueTimers } from '../../src/commands/tasks/fire-timers.js';
import type { Task } from '../../src/domain/tasks/index.js';
import { projections } from '../../src/projections/index.js';
import { rebuildReadModels } from '../../src/projections/rebuild.js';
import { createPool } from '../../src/storage/postgres.js';
import { TaskTimerRunner } from '../../src/subscribers/task-timer-runner.js';
import { STAFF } from '../applications/support.js';
import { startApp, seedWorkspace } from '../support/app.js';
import { taskFixture, taskReadModels } from './support.js';

const MINUTE = 60_000;
const silent = pino({ level: 'silent' });

t.test('staff create, read, list, change, complete and reopen tasks through the admin interface', async (t) => {
  const f = await taskFixture(t);
  const leadId = await f.lead();
  const application = await f.convert(await f.lead());
  const due = new Date(f.clock.now().getTime() + 60 * MINUTE).toISOString();

  const task = await f.createTask({
    lead_id: leadId,
    title: 'Ask for the bank statement',
    assignee: 'Vikram@northstar.example',
    due_at: due,
  });
  t.match(task, {
    lead_id: leadId,
    application_id: null,
    title: 'Ask for the bank statement',
    assignee: { email: 'vikram@northstar.example', name: 'Vikram Singh' },
    due_at: due,
    status: 'open',
    overdue: false,
    completed_at: null,
  });
  const onCase = await f.createTask({ application_id: application.id, title: 'Book biometrics', due_at: due });
  t.match(onCase, { application_id: application.id, lead_id: null, assignee: null });

  t.same(await (await f.admin(`/tasks/${task.id}`)).json(), task, 'read back as created');
  const listed = (await (await f.admin(`/tasks?lead_id=${leadId}`)).json()) as { data: Task[] };
  t.same(
    listed.data.map((x) => x.id),
    [task.id],
    "a lead's tasks",
  );
  const forCase = (await (await f.admin(`/tasks?application_id=${application.id}`)).json()) as { data: Task[] };
  t.same(
    forCase.data.map((x) => x.id),
    [onCase.id],
    "an application's tasks",
  );

  const changed = await f.admin(`/tasks/${task.id}`, {
    method: 'PATCH',
    json: { title: 'Ask for the last 6 months of bank statements', assignee: null },
  });
  t.equal(changed.status, 200);
  t.match(await changed.json(), { title: 'Ask for the last 6 months of bank statements', assignee: null });

  f.clock.advance(MINUTE);
  const completed = (await (await f.admin(`/tasks/${task.id}/complete`, { method: 'POST' })).json()) as Task;
  t.match(completed, { status: 'completed', completed_at: f.clock.now().toISOString() });
  const reopened = (await (await f.admin(`/tasks/${task.id}/reopen`, { method: 'POST' })).json()) as Task;
  t.match(reopened, { status: 'open', completed_at: null });

  const events = await f.taskEvents(task.id);
  t.same(
    events.map((e) => e.type),
    ['task.created', 'task.changed', 'task.completed', 'task.reopened'],
  );
  t.ok(
    events.every((e) => e.metadata.actor.type === 'user' && e.metadata.actor.email === STAFF),
    'staff recorded as actor',
  );

  // Refusals, each in the Error shape.
  const both = await f.admin('/tasks', {
    method: 'POST',
    json: { lead_id: leadId, application_id: application.id, title: 'x', due_at: due },
  });
  t.equal(both.status, 400);
  t.match(await both.json(), { error: 'validation_failed', fields: { lead_id: String } });
  const neither = await f.admin('/tasks', { method: 'POST', json: { title: 'x', due_at: due } });
  t.equal(neither.status, 400);
  const stranger = await f.admin('/tasks', {
    method: 'POST',
    json: { lead_id: leadId, title: 'x', due_at: due, assignee: 'former@northstar.example' },
  });
  t.match(await stranger.json(), { error: 'validation_failed', fields: { assignee: String } });
  const unknownLead = await f.admin('/tasks', {
    method: 'POST',
    json: { lead_id: '00000000-0000-4000-8000-000000000000', title: 'x', due_at: due },
  });
  t.equal(unknownLead.status, 404);
  t.match(await unknownLead.json(), { error: 'not_found', message: 'No such lead' });
  const otherMode = await f.admin(`/tasks/${task.id}/complete`, { method: 'POST', sandbox: true });
  t.equal(otherMode.status, 404, "a live task is not the sandbox's");
  t.equal(
    (await f.admin('/tasks', { method: 'POST', json: { lead_id: leadId, title: 'x', due_at: 'tomorrow' } })).status,
    400,
  );

  // The other workspace cannot see or touch it.
  const other = await seedWorkspace(f.app, { slug: 'other-consultancy', name: 'Other' });
  const foreign = await f.admin(`/tasks/${task.id}`, { workspace: other.workspace.slug, token: other.staffToken });
  t.equal(foreign.status, 404);
});

t.test(
  'the durable timer on a controllable clock: once after the due time, never before, re-armed by a move',
  async (t) => {
    const f = await taskFixture(t);
    const { pool, store } = f.app.services;
    const leadId = await f.lead();
    const start = f.clock.now().getTime();
    const task = await f.createTask({
      lead_id: leadId,
      title: 'Chase the offer letter',
      due_at: new Date(start + 10 * MINUTE).toISOString(),
    });
    const early = await f.createTask({
      lead_id: leadId,
      title: 'Done in time',
      due_at: new Date(start + 10 * MINUTE).toISOString(),
    });

    f.clock.advance(9 * MINUTE);
    t.same(await fireDueTimers(pool, store, f.clock.now()), { due: 0, fired: 0 }, 'nothing is due yet');
    t.equal(
      ((await (await f.admin(`/tasks/${early.id}/complete`, { method: 'POST' })).json()) as Task).status,
      'completed',
    );

    f.clock.advance(MINUTE);
    t.same(
      await fireDueTimers(pool, store, f.clock.now()),
      { due: 1, fired: 1 },
      'at the due time: the open task fires',
    );
    t.equal(await f.overdueCount(task.id), 1);
    t.equal(await f.overdueCount(early.id), 0, 'completed before the due time: nothing');
    const overdue = (await f.taskEvents(task.id)).find((e) => e.type === 'task.overdue')!;
    t.match(overdue.metadata.actor, { type: 'system', name: 'task timer' });
    const shown = (await (await f.admin(`/tasks/${task.id}`)).json()) as Task;
    t.same(overdue.data.payload, shown, 'the event carries the Task as the admin interface shows it');
    t.equal(shown.overdue, true);

    f.clock.advance(60 * MINUTE);
    t.same(await fireDueTimers(pool, store, f.clock.now()), { due: 0, fired: 0 }, 'never again for that due time');

    const moved = await f.admin(`/tasks/${task.id}`, {
      method: 'PATCH',
      json: { due_at: new Date(f.clock.now().getTime() + 5 * MINUTE).toISOString() },
    });
    t.equal(((await moved.json()) as Task).overdue, false, 'a new due time clears overdue');
    f.clock.advance(5 * MINUTE);
    t.same(await fireDueTimers(pool, store, f.clock.now()), { due: 1, fired: 1 }, 'the new due time fires once');
    t.equal(await f.overdueCount(task.id), 2);

    // A task created with a due time already past fires on the next pass.
    const late = await f.createTask({ lead_id: leadId, title: 'Already late', due_at: new Date(start).toISOString() });
    t.same(await fireDueTimers(pool, store, f.clock.now()), { due: 1, fired: 1 });
    t.equal(await f.overdueCount(late.id), 1);

    const before = await taskReadModels(pool);
    await rebuildReadModels(pool, projections, f.app.services.personalData);
    t.same(await taskReadModels(pool), before, 'read-models rebuild gives the same tasks and timers');
  },
);

t.test('a due time that passed while no runner ran fires when one starts, exactly once', async (t) => {
  const f = await taskFixture(t);
  const services = f.app.services;
  const leadId = await f.lead();
  const task = await f.createTask({
    lead_id: leadId,
    title: 'Call back',
    due_at: new Date(f.clock.now().getTime() + MINUTE).toISOString(),
  });
  const first = new TaskTimerRunner(services, silent, { pollIntervalMs: 10 });
  first.start();
  await first.settled();
  await first.stop();
  t.equal(await f.overdueCount(task.id), 0, 'the first runner found nothing due');

  // The service is down while the due time passes; on start the late timer fires.
  f.clock.advance(30 * MINUTE);
  const second = new TaskTimerRunner(services, silent, { pollIntervalMs: 60_000 });
  second.start();
  await second.settled();
  t.equal(await f.overdueCount(task.id), 1, 'fired on start');
  second.wake();
  await second.settled();
  await second.stop();
  t.equal(await f.overdueCount(task.id), 1, 'and only once');
});

t.test('two runners with their own connections and stores fire each of many timers exactly once', async (t) => {
  const f = await taskFixture(t);
  const leadId = await f.lead();
  const due = new Date(f.clock.now().getTime() + MINUTE).toISOString();
  const tasks: Task[] = [];
  for (let i = 0; i < 40; i++) tasks.push(await f.createTask({ lead_id: leadId, title: `Task ${i}`, due_at: due }));
  f.clock.advance(2 * MINUTE);

  // A second "process": its own pool and event store on the same database.
  const pool = createPool(f.app.services.config.databaseUrl!, 4);
  t.teardown(() => pool.end());
  const other = await createServices(
    f.app.services.config,
    { pool, url: f.app.services.config.databaseUrl!, kind: 'external', close: async () => undefined },
    f.clock.now,
  );
  t.teardown(async () => {
    await other.rateLimits.close();
    await other.keys.close();
  });
  const runners = [
    new TaskTimerRunner(f.app.services, silent, { pollIntervalMs: 5, batchSize: 7 }),
    new TaskTimerRunner(other, silent, { pollIntervalMs: 5, batchSize: 7 }),
  ];
  for (const r of runners) r.start();
  const until = Date.now() + 20_000;
  while (Date.now() < until) {
    const left = await f.app.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM task_timers');
    if (left.rows[0]!.n === 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  for (const r of runners) await r.stop();
  const counts = await f.app.pool.query<{ stream_id: string; n: number }>(
    "SELECT stream_id, count(*)::int AS n FROM events WHERE type = 'task.overdue' GROUP BY stream_id",
  );
  t.equal(counts.rows.length, 40, 'every task fired');
  t.ok(
    counts.rows.every((r) => r.n === 1),
    'each exactly once',
  );
});

t.test('real time: the timer fires within seconds of the due time', async (t) => {
  const app = await startApp(t, { config: { adminToken: 'admin-token-for-tests-0123456789' } });
  const ws = await seedWorkspace(app);
  const lead = await app.request('/v1/leads', {
    method: 'POST',
    key: ws.live,
    json: { full_name: 'Real Time', email: 'real.time@example.org', consent: true },
  });
  const leadId = ((await lead.json()) as { id: string }).id;
  const dueAt = new Date(Date.now() + 1500);
  const created = await app.request(`/admin/v1/workspaces/${ws.workspace.slug}/tasks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ws.staffToken}` },
    json: { lead_id: leadId, title: 'Real time', due_at: dueAt.toISOString() },
  });
  const task = (await created.json()) as Task;
  const runner = new TaskTimerRunner(app.services, silent, { pollIntervalMs: 250 });
  runner.start();
  t.teardown(() => runner.stop());
  const until = Date.now() + 15_000;
  let fired;
  while (!fired && Date.now() < until) {
    fired = (await app.services.store.readStream(`task-${task.id}`)).find((e) => e.type === 'task.overdue');
    if (!fired) await new Promise((r) => setTimeout(r, 50));
  }
  t.ok(fired, 'task.overdue was emitted');
  t.ok(fired!.createdAt.getTime() >= dueAt.getTime(), 'not before the due time');
});
