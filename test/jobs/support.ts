import type pg from 'pg';
import { pino } from 'pino';
import { bulkImportLeads } from '../../bench/bulk-seed.js';
import { seededSubmission } from '../../bench/support.js';
import {
  findJob,
  itemsWithOutcome,
  jobProgress,
  type ItemOutcomeKind,
  type Job,
  type JobProgress,
  type JobScope,
} from '../../src/jobs/jobs.js';
import { JobWorker } from '../../src/subscribers/job-worker.js';
import { jobKindsOf } from '../../src/subscribers/job-kinds.js';
import type { TestApp } from '../support/app.js';
import type { Workspace } from '../../src/workspaces/workspace.js';
import type { Actor } from '../../src/events/types.js';

/** `count` leads made in one go (the benchmark's seeding: events and rows, no webhooks), oldest first; their ids. */
export async function seedJobLeads(pool: pg.Pool, workspace: Workspace, count: number, from = 0): Promise<string[]> {
  const leads = await bulkImportLeads(
    pool,
    workspace,
    false,
    { key: 'api', name: 'API' },
    { type: 'system', name: 'tests' },
    Array.from({ length: count }, (_, i) => ({
      submission: seededSubmission(from + i, null),
      at: new Date(Date.UTC(2026, 9, 1) + (from + i) * 1000),
    })),
  );
  return leads.map((l) => l.id);
}

/** The member of `email` as an event's actor. */
export function memberActor(workspace: Workspace, email: string): Actor {
  const user = workspace.settings.users.find((u) => u.email === email)!;
  return { type: 'user', user_id: user.id, email: user.email, name: user.name };
}

/** Waits until the job has ended (done or failed), up to `ms`; its row and progress. */
export async function jobEnded(
  pool: pg.Pool,
  scope: JobScope,
  id: string,
  ms = 60_000,
): Promise<{ job: Job; progress: JobProgress }> {
  const until = Date.now() + ms;
  for (;;) {
    const job = (await findJob(pool, scope, id))!;
    if (job.state === 'done' || job.state === 'failed') return { job, progress: await jobProgress(pool, job) };
    if (Date.now() > until) throw new Error(`job ${id} still ${job.state} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Each lead's events of a type, by lead id. */
export async function eventsByLead(pool: pg.Pool, tenantId: string, type: string): Promise<Map<string, number>> {
  const rows = await pool.query<{ stream_id: string; n: number }>(
    `SELECT stream_id, count(*)::int AS n FROM events WHERE tenant_id = $1 AND type = $2 GROUP BY stream_id`,
    [tenantId, type],
  );
  return new Map(rows.rows.map((r) => [r.stream_id.replace(/^lead-/, ''), r.n]));
}

/** Single edits a job is held for: they run before the job's first item (or transaction) at or after `at`. */
export interface Hold<Edit> {
  at: number;
  edits: Edit[];
}

/**
 * Works the jobs to their end with a worker that runs each job's held edits before its items, each hold once, as the
 * bulk properties' models do; returns each job's item outcomes by seq.
 */
export async function workJobsWithHolds<Edit>(
  app: TestApp,
  scope: JobScope,
  jobs: { id: string; holds: Hold<Edit>[] }[],
  edit: (e: Edit) => Promise<void>,
  options: { itemsPerTransaction?: number } = {},
): Promise<Map<number, ItemOutcomeKind>[]> {
  const holdsOf = new Map(jobs.map((j) => [j.id, { holds: j.holds, fired: new Set<number>() }]));
  const worker = new JobWorker(app.services, jobKindsOf(app.services), pino({ level: 'silent' }), {
    pollIntervalMs: 20,
    ...options,
    beforeItem: async (job, seq) => {
      const held = holdsOf.get(job.id)!;
      for (const [k, h] of held.holds.entries())
        if (!held.fired.has(k) && h.at <= seq) {
          held.fired.add(k);
          for (const e of h.edits) await edit(e);
        }
    },
  });
  worker.start();
  try {
    for (const job of jobs) await jobEnded(app.pool, scope, job.id);
  } finally {
    await worker.stop();
  }
  const outcomes: Map<number, ItemOutcomeKind>[] = [];
  for (const job of jobs) {
    const items = await itemsWithOutcome(app.pool, { id: job.id, ...scope }, ['done', 'refused', 'skipped'], 100);
    outcomes.push(new Map(items.map((i) => [i.seq, i.outcome])));
  }
  return outcomes;
}
