import t from 'tap';
import { LEAD_BULK_KINDS } from '../../src/commands/bulk/lead-actions.js';
import { createJob, findJob, itemsWithOutcome, jobProgress } from '../../src/jobs/jobs.js';
import { findLead } from '../../src/projections/leads-queries.js';
import { seedWorkspace, startApp, TEST_ENCRYPTION_KEY } from '../support/app.js';
import { startServiceProcess } from '../support/service-process.js';
import { everyRole, memberOf } from '../identity/support.js';
import { eventsByLead, jobEnded, memberActor, seedJobLeads } from './support.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The real service (`visa-crm serve`, workers on) works a bulk assignment and is killed with SIGKILL halfway; a second
// process resumes the job once the first one's lease has lapsed. What was done before the kill is exactly what the
// items say, and at the end every lead was assigned once, with one lead.assigned event each.
t.test('a bulk assignment survives a SIGKILL of its service halfway', async (t) => {
  const app = await startApp(t);
  const { workspace } = await seedWorkspace(app, everyRole());
  const seeded = await seedJobLeads(app.pool, workspace, 1200);
  const del = workspace.settings.branches.find((b) => b.code === 'DEL')!.id;
  const leads = (
    await app.pool.query<{ id: string }>(
      `SELECT id FROM leads WHERE tenant_id = $1 AND branch_id = $2 AND id = ANY($3::uuid[]) ORDER BY id`,
      [workspace.id, del, seeded],
    )
  ).rows.map((r) => r.id);
  const scope = { tenantId: workspace.id, sandbox: false };
  const id = await createJob(app.pool, {
    ...scope,
    kind: LEAD_BULK_KINDS.assign,
    actor: memberActor(workspace, memberOf('manager')),
    params: { owner_email: memberOf('admin') },
    items: leads.map((lead_id) => ({ subject: lead_id, input: { lead_id } })),
    now: new Date(),
  });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: app.services.config.databaseUrl!,
    SECRET_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    RUN_WORKERS: 'true',
  };
  const first = await startServiceProcess(env);
  t.teardown(() => {
    if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
  });
  // Kill it once some but not all of the items are done.
  for (;;) {
    const p = await jobProgress(app.pool, { id, ...scope });
    if (p.done >= leads.length / 4) break;
    if (p.pending === 0) throw new Error('the job ended before the kill: make it longer');
    await sleep(5);
  }
  first.child.kill('SIGKILL');
  await first.exited;

  const halfway = await jobProgress(app.pool, { id, ...scope });
  t.ok(halfway.pending > 0, `killed with ${halfway.pending} of ${halfway.total} to do`);
  const job = (await findJob(app.pool, scope, id))!;
  t.equal(job.state, 'running', 'the job is still leased to the dead worker');
  const done = new Set((await itemsWithOutcome(app.pool, job, ['done'], 10_000)).map((i) => i.subject));
  const assigned = await eventsByLead(app.pool, workspace.id, 'lead.assigned');
  t.equal(done.size, halfway.done);
  t.same(
    leads.filter((l) => assigned.has(l)).sort(),
    [...done].sort(),
    'exactly the leads whose items say done were assigned: the outcome and the change committed together',
  );

  // The lease (30 s) lapses; a second service resumes the job.
  const second = await startServiceProcess(env);
  t.teardown(() => {
    if (second.child.exitCode === null && second.child.signalCode === null) second.child.kill('SIGKILL');
  });
  const ended = await jobEnded(app.pool, scope, id, 120_000);
  t.equal(ended.job.state, 'done');
  t.same(ended.progress, { total: leads.length, done: leads.length, refused: 0, skipped: 0, pending: 0 });
  const after = await eventsByLead(app.pool, workspace.id, 'lead.assigned');
  t.equal(
    leads.filter((l) => after.get(l) === 1).length,
    leads.length,
    'every lead has exactly one lead.assigned event',
  );
  const owners = await Promise.all(leads.map((lead) => findLead(app.pool, workspace.id, false, lead)));
  t.same(new Set(owners.map((l) => l?.owner?.email)), new Set([memberOf('admin')]), 'each lead is the admin’s');
  second.child.kill('SIGTERM');
  t.equal(await second.exited, 0, 'a clean shutdown with the worker idle');
});
