import type { AppServices } from '../../bootstrap.js';
import { IMPORT_KIND } from '../../commands/leads/import-rows.js';
import {
  importSummary,
  markStarted,
  readyRows,
  recentImports as recentOfWorkspace,
  setImportJob,
  type LeadImport,
  type RecentImport,
} from '../../intake/import/store.js';
import { createJob, findJob, itemsWithOutcome, jobProgress } from '../../jobs/jobs.js';
import type { Queryable } from '../../storage/postgres.js';
import type { MemberView } from '../context.js';
import { actorOf } from '../forms.js';
import { progressPage } from './lead-import-views.js';

/** Refusals listed on the progress page. */
const REFUSALS_SHOWN = 200;

export const recentImports = (sql: Queryable, tenantId: string): Promise<RecentImport[]> =>
  recentOfWorkspace(sql, tenantId);

/**
 * Starts the import of an upload's checked rows as a job (src/jobs), one item per row that passed, once: a second
 * press finds it started and changes nothing.
 */
export async function startImport(services: AppServices, view: MemberView, lead: LeadImport): Promise<void> {
  const now = services.now();
  if (!(await markStarted(services.pool, lead, now))) return;
  const rows = await readyRows(services.pool, lead);
  const jobId = await createJob(services.pool, {
    tenantId: lead.tenantId,
    sandbox: false,
    kind: IMPORT_KIND,
    actor: actorOf(view),
    params: { import_id: lead.id, file_sha256: lead.sha256 },
    items: rows.map((row) => ({ subject: `Row ${row}`, input: { row } })),
    now,
  });
  await setImportJob(services.pool, lead, jobId);
}

/** The progress page of an upload's import, counted from its job's items. */
export async function importProgress(services: AppServices, view: MemberView, lead: LeadImport): Promise<string> {
  const job = lead.jobId ? await findJob(services.pool, { tenantId: lead.tenantId, sandbox: false }, lead.jobId) : null;
  if (!job)
    return progressPage(view, lead, {
      state: lead.startedAt ? 'queued' : 'not_started',
      total: 0,
      done: 0,
      refused: 0,
      skipped: 0,
      pending: 0,
      leftOut: (await importSummary(services.pool, lead)).withProblems,
      refusals: [],
    });
  const progress = await jobProgress(services.pool, job);
  const refusals = await itemsWithOutcome(services.pool, job, ['refused'], REFUSALS_SHOWN);
  return progressPage(view, lead, {
    state: job.state,
    ...progress,
    leftOut: (await importSummary(services.pool, lead)).withProblems,
    refusals: refusals.map((r) => ({ row: r.subject ?? `Item ${r.seq}`, reason: r.reason })),
  });
}
