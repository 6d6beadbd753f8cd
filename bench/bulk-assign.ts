import type pg from 'pg';
import { pino } from 'pino';
import type { AppServices } from '../src/bootstrap.js';
import { LEAD_BULK_KINDS } from '../src/commands/bulk/lead-actions.js';
import { createJob, findJob, jobProgress } from '../src/jobs/jobs.js';
import { JobWorker } from '../src/subscribers/job-worker.js';
import { jobKindsOf } from '../src/subscribers/job-kinds.js';
import type { Workspace } from '../src/workspaces/workspace.js';

/**
 * One bulk assignment of `count` leads, as the console makes it: a job of one item per lead, worked by a JobWorker
 * in this process (each lead's lead.assigned and its item's outcome in one transaction). Times from the job's
 * creation to its last item's outcome; returns the seconds and the outcomes.
 */
export async function benchBulkAssign(
  services: AppServices,
  pool: pg.Pool,
  workspace: Workspace,
  count: number,
): Promise<{ seconds: number; done: number; refused: number; skipped: number; total: number }> {
  // The workspace's owner takes over leads of their branch (auto-assignment gave them to its counsellor).
  const owner = workspace.settings.users.find((u) => u.active && u.role === 'owner')!;
  const manager = owner;
  const branch = owner.branch_id;
  // Leads of the owner's branch, not theirs yet: each item changes its lead.
  const leads = await pool.query<{ id: string }>(
    `SELECT id FROM leads WHERE tenant_id = $1 AND sandbox = false AND branch_id = $2 AND owner_id IS DISTINCT FROM $3
      AND converted = false ORDER BY created_at DESC LIMIT $4`,
    [workspace.id, branch, owner.id, count],
  );
  const worker = new JobWorker(services, jobKindsOf(services), pino({ level: 'warn' }), { pollIntervalMs: 100 });
  worker.start();
  const scope = { tenantId: workspace.id, sandbox: false };
  const started = performance.now();
  const id = await createJob(pool, {
    ...scope,
    kind: LEAD_BULK_KINDS.assign,
    actor: { type: 'user', user_id: manager.id, email: manager.email, name: manager.name },
    params: { owner_email: owner.email },
    items: leads.rows.map((r) => ({ subject: r.id, input: { lead_id: r.id } })),
    now: new Date(),
  });
  worker.wake();
  for (;;) {
    const job = (await findJob(pool, scope, id))!;
    if (job.state === 'done' || job.state === 'failed') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const seconds = (performance.now() - started) / 1000;
  await worker.stop();
  const progress = await jobProgress(pool, { id, ...scope });
  return { seconds, ...progress };
}
