import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Actor } from '../events/types.js';
import type { Queryable } from '../storage/postgres.js';
import { withTransaction } from '../storage/postgres.js';

/*
 * The jobs of migration 170 (docs/architecture.md, "Work queues: lease the parent, write each item twice"): a job is
 * made with its items in one transaction; a worker leases the job row, and each item is written once more with its
 * outcome, in the transaction of the change it makes. Every statement here but the claim names the job's workspace,
 * so a job id of another workspace finds nothing.
 */

/** Announced (NOTIFY) when a job is made, so a worker in any process starts on it at once. */
export const JOBS_CHANNEL = 'vcrm_jobs';

export type JobState = 'queued' | 'running' | 'done' | 'failed' | 'cancelled';
export type ItemOutcomeKind = 'done' | 'refused' | 'skipped';

/** Who a job belongs to: its workspace and mode. Every read and write of a job or its items is scoped by it. */
export interface JobScope {
  tenantId: string;
  sandbox: boolean;
}

export interface Job extends JobScope {
  id: string;
  kind: string;
  actor: Actor;
  params: unknown;
  state: JobState;
  total: number;
  leaseOwner: string | null;
  leaseUntil: Date | null;
  error: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export interface NewJobItem {
  /** What the item is about (a lead's id, a CSV row's number), shown with a refusal. */
  subject: string | null;
  input: unknown;
}

/** An item's outcome, as written in the transaction of the change it made (or of its refusal). */
export interface ItemOutcome {
  outcome: ItemOutcomeKind;
  /** Why it was refused or skipped, in words a member reads. */
  reason?: string;
  /** What it made (a new record's id). */
  result?: string;
}

interface JobRow {
  id: string;
  tenant_id: string;
  sandbox: boolean;
  kind: string;
  actor: Actor;
  params: unknown;
  state: JobState;
  total: number;
  lease_owner: string | null;
  lease_until: Date | null;
  error: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

const JOB_COLUMNS =
  'id, tenant_id, sandbox, kind, actor, params, state, total, lease_owner, lease_until, error, created_at, started_at, finished_at';

function jobOf(row: JobRow): Job {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    sandbox: row.sandbox,
    kind: row.kind,
    actor: row.actor,
    params: row.params,
    state: row.state,
    total: row.total,
    leaseOwner: row.lease_owner,
    leaseUntil: row.lease_until,
    error: row.error,
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
  };
}

/** Items are inserted this many to a statement (one array parameter per column). */
const INSERT_CHUNK = 5000;

/** Makes a queued job with its items (numbered from 1 in the order given) in one transaction; returns its id. */
export async function createJob(
  pool: pg.Pool,
  o: JobScope & { kind: string; actor: Actor; params: unknown; items: readonly NewJobItem[]; now: Date },
): Promise<string> {
  const id = randomUUID();
  await withTransaction(pool, async (sql) => {
    await sql.query(
      `INSERT INTO jobs (id, tenant_id, sandbox, kind, actor, params, state, total, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7, $8)`,
      [id, o.tenantId, o.sandbox, o.kind, JSON.stringify(o.actor), JSON.stringify(o.params), o.items.length, o.now],
    );
    for (let start = 0; start < o.items.length; start += INSERT_CHUNK) {
      const chunk = o.items.slice(start, start + INSERT_CHUNK);
      await sql.query(
        `INSERT INTO job_items (job_id, seq, subject, input)
         SELECT $1, t.seq, t.subject, t.input FROM unnest($2::int[], $3::text[], $4::jsonb[]) AS t(seq, subject, input)`,
        [
          id,
          chunk.map((_, i) => start + i + 1),
          chunk.map((item) => item.subject),
          chunk.map((item) => (item.input === undefined ? null : JSON.stringify(item.input))),
        ],
      );
    }
    await sql.query('SELECT pg_notify($1, $2)', [JOBS_CHANNEL, '']);
  });
  return id;
}

/**
 * Leases the oldest runnable job (queued, or running under a lease that lapsed) to `owner` until `leaseUntil`, or
 * none. The one statement not scoped to a workspace: a worker serves every workspace, and the job it gets names its own.
 */
export async function claimJob(
  sql: Queryable,
  owner: string,
  now: Date,
  leaseUntil: Date,
  kinds: readonly string[],
): Promise<Job | undefined> {
  const claimed = await sql.query<JobRow>(
    `UPDATE jobs SET state = 'running', lease_owner = $1, lease_until = $3, started_at = COALESCE(started_at, $2)
     WHERE id = (
       SELECT id FROM jobs
       WHERE state IN ('queued', 'running') AND (lease_until IS NULL OR lease_until < $2) AND kind = ANY($4::text[])
       ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
     RETURNING ${JOB_COLUMNS}`,
    [owner, now, leaseUntil, kinds],
  );
  return claimed.rows[0] ? jobOf(claimed.rows[0]) : undefined;
}

/** Extends the lease while `owner` still holds it; false when it was lost (lapsed and taken, or the job ended). */
export async function renewLease(sql: Queryable, job: Job, owner: string, leaseUntil: Date): Promise<boolean> {
  const renewed = await sql.query(
    `UPDATE jobs SET lease_until = $4
     WHERE id = $1 AND tenant_id = $2 AND sandbox = $3 AND lease_owner = $5 AND state = 'running'`,
    [job.id, job.tenantId, job.sandbox, leaseUntil, owner],
  );
  return renewed.rowCount === 1;
}

/** Gives the lease up (a worker stopping), so another worker resumes the job at once rather than when it lapses. */
export async function releaseLease(sql: Queryable, job: Job, owner: string): Promise<void> {
  await sql.query(
    `UPDATE jobs SET lease_owner = NULL, lease_until = NULL
     WHERE id = $1 AND tenant_id = $2 AND sandbox = $3 AND lease_owner = $4 AND state = 'running'`,
    [job.id, job.tenantId, job.sandbox, owner],
  );
}

export interface PendingItem {
  seq: number;
  subject: string | null;
  input: unknown;
}

/** The next items without an outcome after `after`, in seq order (the `job_items_todo` partial index). */
export async function pendingItems(sql: Queryable, job: Job, limit: number, after = 0): Promise<PendingItem[]> {
  const rows = await sql.query<PendingItem>(
    `SELECT i.seq, i.subject, i.input FROM job_items i
     WHERE i.job_id = $1 AND i.outcome IS NULL AND i.seq > $5
       AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = $1 AND j.tenant_id = $2 AND j.sandbox = $3)
     ORDER BY i.seq LIMIT $4`,
    [job.id, job.tenantId, job.sandbox, limit, after],
  );
  return rows.rows;
}

/**
 * Inside the transaction of an item's change, first: locks the item's row and answers whether it still has no
 * outcome and its job is running. False means another worker did it (or the job ended): change nothing. The row lock
 * holds a second worker on the same item until this transaction ends, and it then finds the outcome written.
 */
export async function claimItem(sql: Queryable, job: Job, seq: number): Promise<boolean> {
  const locked = await sql.query(
    `SELECT 1 FROM job_items i
     WHERE i.job_id = $1 AND i.seq = $2 AND i.outcome IS NULL
       AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = $1 AND j.tenant_id = $3 AND j.sandbox = $4 AND j.state = 'running')
     FOR UPDATE OF i`,
    [job.id, seq, job.tenantId, job.sandbox],
  );
  return locked.rows.length === 1;
}

/** `claimItem` for several items of a job in one statement: the seqs locked that still have no outcome. */
export async function claimItems(sql: Queryable, job: Job, seqs: readonly number[]): Promise<Set<number>> {
  const locked = await sql.query<{ seq: number }>(
    `SELECT i.seq FROM job_items i
     WHERE i.job_id = $1 AND i.seq = ANY($2::int[]) AND i.outcome IS NULL
       AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = $1 AND j.tenant_id = $3 AND j.sandbox = $4 AND j.state = 'running')
     ORDER BY i.seq FOR UPDATE OF i`,
    [job.id, seqs, job.tenantId, job.sandbox],
  );
  return new Set(locked.rows.map((r) => r.seq));
}

/** `settleItem` for several items in one statement (each claimed in this transaction); how many were written. */
export async function settleItems(
  sql: Queryable,
  job: Job,
  outcomes: readonly (readonly [number, ItemOutcome])[],
): Promise<number> {
  if (outcomes.length === 0) return 0;
  const settled = await sql.query(
    `UPDATE job_items i SET outcome = o.outcome, reason = o.reason, result = o.result
     FROM unnest($2::int[], $3::text[], $4::text[], $5::text[]) AS o(seq, outcome, reason, result)
     WHERE i.job_id = $1 AND i.seq = o.seq AND i.outcome IS NULL
       AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = $1 AND j.tenant_id = $6 AND j.sandbox = $7)`,
    [
      job.id,
      outcomes.map(([seq]) => seq),
      outcomes.map(([, o]) => o.outcome),
      outcomes.map(([, o]) => o.reason ?? null),
      outcomes.map(([, o]) => o.result ?? null),
      job.tenantId,
      job.sandbox,
    ],
  );
  return settled.rowCount ?? 0;
}

/** Writes an item's outcome (in the transaction of its change, after `claimItem`); false if it had one already. */
export async function settleItem(sql: Queryable, job: Job, seq: number, outcome: ItemOutcome): Promise<boolean> {
  const settled = await sql.query(
    `UPDATE job_items SET outcome = $3, reason = $4, result = $5
     WHERE job_id = $1 AND seq = $2 AND outcome IS NULL
       AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = $1 AND j.tenant_id = $6 AND j.sandbox = $7)`,
    [job.id, seq, outcome.outcome, outcome.reason ?? null, outcome.result ?? null, job.tenantId, job.sandbox],
  );
  return settled.rowCount === 1;
}

/** Ends a job whose items all have an outcome (`done`), or with `failed` and why; only by the lease's holder. */
export async function finishJob(
  sql: Queryable,
  job: Job,
  owner: string,
  now: Date,
  failure?: string,
): Promise<boolean> {
  const finished = await sql.query(
    `UPDATE jobs SET state = $5, error = $6, finished_at = $7, lease_owner = NULL, lease_until = NULL
     WHERE id = $1 AND tenant_id = $2 AND sandbox = $3 AND lease_owner = $4 AND state = 'running'
       AND ($5 = 'failed' OR NOT EXISTS (SELECT 1 FROM job_items WHERE job_id = $1 AND outcome IS NULL))`,
    [job.id, job.tenantId, job.sandbox, owner, failure === undefined ? 'done' : 'failed', failure ?? null, now],
  );
  return finished.rowCount === 1;
}

/** A job of the workspace and mode, or none (another workspace's id is none). */
export async function findJob(sql: Queryable, scope: JobScope, id: string): Promise<Job | undefined> {
  const rows = await sql.query<JobRow>(
    `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = $1 AND tenant_id = $2 AND sandbox = $3`,
    [id, scope.tenantId, scope.sandbox],
  );
  return rows.rows[0] ? jobOf(rows.rows[0]) : undefined;
}

/** The workspace's most recent jobs, newest first (optionally of some kinds only). */
export async function recentJobs(
  sql: Queryable,
  scope: JobScope,
  limit: number,
  kinds?: readonly string[],
): Promise<Job[]> {
  const rows = await sql.query<JobRow>(
    `SELECT ${JOB_COLUMNS} FROM jobs WHERE tenant_id = $1 AND sandbox = $2 AND ($4::text[] IS NULL OR kind = ANY($4::text[]))
     ORDER BY created_at DESC LIMIT $3`,
    [scope.tenantId, scope.sandbox, limit, kinds ?? null],
  );
  return rows.rows.map(jobOf);
}

export interface JobProgress {
  total: number;
  done: number;
  refused: number;
  skipped: number;
  /** Items without an outcome yet. */
  pending: number;
}

/** Progress read from the items (counts by outcome), never from a counter a crash could leave wrong. */
export async function jobProgress(sql: Queryable, job: Pick<Job, 'id' | 'tenantId' | 'sandbox'>): Promise<JobProgress> {
  const rows = await sql.query<{ outcome: ItemOutcomeKind | null; n: number }>(
    `SELECT i.outcome, count(*)::int AS n FROM job_items i
     WHERE i.job_id = $1 AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = $1 AND j.tenant_id = $2 AND j.sandbox = $3)
     GROUP BY i.outcome`,
    [job.id, job.tenantId, job.sandbox],
  );
  const progress: JobProgress = { total: 0, done: 0, refused: 0, skipped: 0, pending: 0 };
  for (const { outcome, n } of rows.rows) {
    progress.total += n;
    progress[outcome ?? 'pending'] += n;
  }
  return progress;
}

export interface SettledItem {
  seq: number;
  subject: string | null;
  outcome: ItemOutcomeKind;
  reason: string | null;
  result: string | null;
}

/** Items of a job with one of the outcomes, in seq order (the refusals a job page lists). */
export async function itemsWithOutcome(
  sql: Queryable,
  job: Pick<Job, 'id' | 'tenantId' | 'sandbox'>,
  outcomes: readonly ItemOutcomeKind[],
  limit: number,
): Promise<SettledItem[]> {
  const rows = await sql.query<SettledItem>(
    `SELECT i.seq, i.subject, i.outcome, i.reason, i.result FROM job_items i
     WHERE i.job_id = $1 AND i.outcome = ANY($4::text[])
       AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = $1 AND j.tenant_id = $2 AND j.sandbox = $3)
     ORDER BY i.seq LIMIT $5`,
    [job.id, job.tenantId, job.sandbox, outcomes, limit],
  );
  return rows.rows;
}
