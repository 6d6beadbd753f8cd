import t from 'tap';
import { pino } from 'pino';
import { LEAD_BULK_KINDS } from '../../src/commands/bulk/lead-actions.js';
import { createJob, findJob, itemsWithOutcome, jobProgress, recentJobs } from '../../src/jobs/jobs.js';
import { JobWorker } from '../../src/subscribers/job-worker.js';
import { jobKindsOf } from '../../src/subscribers/job-kinds.js';
import { findLead } from '../../src/projections/leads-queries.js';
import { seedWorkspace, startApp } from '../support/app.js';
import { everyRole, memberOf } from '../identity/support.js';
import { eventsByLead, jobEnded, memberActor, seedJobLeads } from './support.js';

const silent = pino({ level: 'silent' });

t.test(
  'a bulk assignment job: each lead of the branch assigned once with the member as actor, the others refused with why',
  async (t) => {
    const app = await startApp(t);
    const { workspace } = await seedWorkspace(app, everyRole());
    const other = await seedWorkspace(app, everyRole());
    const leads = await seedJobLeads(app.pool, workspace, 40);
    const actor = memberActor(workspace, memberOf('manager'));
    const scope = { tenantId: workspace.id, sandbox: false };
    const id = await createJob(app.pool, {
      ...scope,
      kind: LEAD_BULK_KINDS.assign,
      actor,
      params: { owner_email: memberOf('admin') },
      items: leads.map((lead_id) => ({ subject: lead_id, input: { lead_id } })),
      now: app.services.now(),
    });
    t.equal(
      await findJob(app.pool, { tenantId: other.workspace.id, sandbox: false }, id),
      undefined,
      'another workspace finds no such job',
    );
    t.same(
      await jobProgress(app.pool, { id, tenantId: other.workspace.id, sandbox: false }),
      { total: 0, done: 0, refused: 0, skipped: 0, pending: 0 },
      'nor its items',
    );
    t.same(await recentJobs(app.pool, { tenantId: other.workspace.id, sandbox: false }, 10), []);

    const worker = new JobWorker(app.services, jobKindsOf(app.services), silent, { pollIntervalMs: 50 });
    worker.start();
    t.teardown(() => worker.stop());
    const { job, progress } = await jobEnded(app.pool, scope, id);
    t.equal(job.state, 'done');
    t.equal(progress.total, 40);
    t.equal(progress.pending, 0);

    const assigned = await eventsByLead(app.pool, workspace.id, 'lead.assigned');
    const refused = await itemsWithOutcome(app.pool, job, ['refused'], 100);
    for (const lead of leads) {
      const row = (await findLead(app.pool, workspace.id, false, lead))!;
      if (row.branch.code === 'DEL') {
        t.equal(row.owner?.email, memberOf('admin'));
        t.equal(assigned.get(lead), 1, 'one lead.assigned event');
      } else {
        t.equal(assigned.get(lead), undefined, `a lead of ${row.branch.code} is not assigned to a member of DEL`);
        t.match(refused.find((r) => r.subject === lead)?.reason, /owner is not an active user of the lead's branch/);
      }
    }
    t.equal(progress.done + progress.refused, 40);
    t.ok(progress.done > 0 && progress.refused > 0, 'both branches were in the selection');
    const actors = await app.pool.query<{ actor: unknown }>(
      `SELECT DISTINCT metadata->'actor' AS actor FROM events WHERE tenant_id = $1 AND type = 'lead.assigned'`,
      [workspace.id],
    );
    t.same(
      actors.rows.map((r) => r.actor),
      [actor],
      'each event names the member who asked',
    );
  },
);
