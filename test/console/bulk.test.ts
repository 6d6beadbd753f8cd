import t from 'tap';
import { pino } from 'pino';
import { JobWorker } from '../../src/subscribers/job-worker.js';
import { jobKindsOf } from '../../src/subscribers/job-kinds.js';
import { findLead } from '../../src/projections/leads-queries.js';
import { seedWorkspace } from '../support/app.js';
import { everyRole, memberOf } from '../identity/support.js';
import { consoleFixture, type ConsoleClient } from './support.js';
import { jobEnded, seedJobLeads } from '../jobs/support.js';

const silent = pino({ level: 'silent' });

t.test('bulk actions in the console: a confirmation names the count, the job page shows the outcome', async (t) => {
  const { app, ws, client } = await consoleFixture(t);
  const w = `/console/w/${ws.workspace.slug}`;
  const leads = await seedJobLeads(app.pool, ws.workspace, 12);
  const worker = new JobWorker(app.services, jobKindsOf(app.services), silent, { pollIntervalMs: 50 });
  worker.start();
  t.teardown(() => worker.stop());
  const scope = { tenantId: ws.workspace.id, sandbox: false };
  const as = async (role: string): Promise<ConsoleClient> => {
    const c = client();
    await c.signIn(memberOf(role as 'owner'));
    return c;
  };

  const manager = await as('manager');
  const picked = leads.slice(0, 5);
  const confirm = await manager.post(`${w}/leads/bulk`, { ids: picked, action: 'assign' });
  t.equal(confirm.status, 200);
  t.match(confirm.text, /Assign an owner: 5 leads/);
  t.match(confirm.text, /name="owner"/);
  for (const id of picked) t.match(confirm.text, `name="ids" value="${id}"`);

  const started = await manager.post(`${w}/leads/bulk`, {
    ids: picked,
    action: 'assign',
    confirm: 'yes',
    owner: memberOf('admin'),
  });
  t.equal(started.status, 303);
  const location = started.headers.get('location')!;
  t.match(location, new RegExp(`^${w}/jobs/[0-9a-f-]{36}\\?done=started$`));
  const jobId = /jobs\/([0-9a-f-]{36})/.exec(location)![1]!;
  const { progress } = await jobEnded(app.pool, scope, jobId);
  const page = await manager.get(`${w}/jobs/${jobId}`);
  t.equal(page.status, 200);
  t.match(page.text, /Finished:/);
  t.notMatch(page.text, /data-running="yes"/);
  t.equal(progress.done + progress.refused + progress.skipped, 5);
  for (const id of picked) {
    const lead = (await findLead(app.pool, ws.workspace.id, false, id))!;
    if (lead.branch.code === 'DEL') t.equal(lead.owner?.email, memberOf('admin'));
    else t.match(page.text, lead.full_name, 'a refused lead is listed by name');
  }
  t.match((await manager.get(`${w}/jobs`)).text, /Assign leads to The admin/, 'recent jobs list it');

  await t.test('all matching: the list’s filter over every page', async (t) => {
    const c = await manager.post(`${w}/leads/bulk`, { scope: 'matching', query: 'stage=new', action: 'move' });
    t.equal(c.status, 200);
    t.match(c.text, /every lead matching the list’s filters: 12 leads/);
    const refusedForm = await manager.post(`${w}/leads/bulk`, {
      scope: 'matching',
      query: 'stage=new',
      action: 'move',
      confirm: 'yes',
      stage: 'lost',
    });
    t.equal(refusedForm.status, 400, 'the lost stage needs a reason');
    t.match(refusedForm.text, /Choose a lost reason/);
    const go = await manager.post(`${w}/leads/bulk`, {
      scope: 'matching',
      query: 'stage=new',
      action: 'move',
      confirm: 'yes',
      stage: 'contacted',
    });
    t.equal(go.status, 303);
    const id = /jobs\/([0-9a-f-]{36})/.exec(go.headers.get('location')!)![1]!;
    const ended = await jobEnded(app.pool, scope, id);
    t.equal(ended.progress.done, 12);
    for (const lead of leads) t.equal((await findLead(app.pool, ws.workspace.id, false, lead))!.stage.key, 'contacted');
  });

  await t.test('roles: a viewer is refused, a counsellor may add tasks', async (t) => {
    const viewer = await as('viewer');
    const refused = await viewer.post(`${w}/leads/bulk`, { ids: picked, action: 'assign' });
    t.equal(refused.status, 403);
    const refusedTask = await viewer.post(`${w}/leads/bulk`, {
      ids: picked,
      action: 'task',
      confirm: 'yes',
      title: 'Call',
      due_at: '2026-12-01T10:00',
    });
    t.equal(refusedTask.status, 403);
    const counsellor = await as('counsellor');
    const task = await counsellor.post(`${w}/leads/bulk`, {
      ids: picked.slice(0, 2),
      action: 'task',
      confirm: 'yes',
      title: 'Call back',
      due_at: '2026-12-01T10:00',
      assignee: 'lead_owner',
    });
    t.equal(task.status, 303);
    const id = /jobs\/([0-9a-f-]{36})/.exec(task.headers.get('location')!)![1]!;
    const ended = await jobEnded(app.pool, scope, id);
    t.equal(ended.progress.done, 2);
    const tasks = await app.pool.query(
      `SELECT count(*)::int AS n FROM events WHERE tenant_id = $1 AND type = 'task.created'`,
      [ws.workspace.id],
    );
    t.equal(tasks.rows[0].n, 2);
  });

  await t.test('another workspace: its job ids are not found, its leads are not selected', async (t) => {
    const other = await seedWorkspace(app, everyRole());
    const theirs = await seedJobLeads(app.pool, other.workspace, 2, 100);
    t.equal(
      (await manager.get(`/console/w/${ws.workspace.slug}/jobs/00000000-0000-4000-8000-000000000000`)).status,
      404,
    );
    const foreign = await manager.post(`${w}/leads/bulk`, { ids: theirs, action: 'assign' });
    t.equal(foreign.status, 400, 'ids of another workspace select nothing');
    const mixed = await manager.post(`${w}/leads/bulk`, { ids: [...theirs, leads[0]!], action: 'assign' });
    t.match(mixed.text, /Assign an owner: 1 lead</);
    // The manager is a member of both (same emails): this workspace's job through the other's path is not found.
    t.equal(
      (await manager.get(`/console/w/${other.workspace.slug}/jobs/${jobId}`)).status,
      404,
      'a job id of another workspace is 404',
    );
    t.notMatch((await manager.get(`/console/w/${other.workspace.slug}/jobs`)).text, jobId);
  });
});
