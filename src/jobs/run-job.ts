import type pg from 'pg';
import { Value } from 'typebox/value';
import { withTransaction } from '../storage/postgres.js';
import {
  claimItem,
  finishJob,
  pendingItems,
  releaseLease,
  renewLease,
  settleItem,
  type ItemOutcome,
  type Job,
  type PendingItem,
} from './jobs.js';
import type { JobItemWork, JobKind, JobKinds } from './kinds.js';

export interface JobRunOptions {
  pool: pg.Pool;
  kinds: JobKinds;
  /** This worker's name in `lease_owner`. */
  owner: string;
  now: () => Date;
  /** How long a lease lasts; renewed every third of it. */
  leaseMs: number;
  /** Items read per statement. */
  batchSize: number;
  /** False once the worker is stopping: the job is handed back at the next item. */
  keepGoing: () => boolean;
  /** Called with a fault of an item (not a refusal), before it is tried again. */
  onFault: (error: unknown, job: Job, seq: number) => void;
  /** Called before each item is worked (tests hold a job at an item here). */
  beforeItem?: (job: Job, seq: number) => Promise<void>;
}

/** An item whose handler failed this many times (faults, not refusals) is refused with the reason below. */
const MAX_FAULTS = 3;
const FAULT_REASON = 'Could not be done: the change failed three times, so it was left as it was.';

export type JobRunEnd = 'finished' | 'failed' | 'stopped' | 'lost';

/**
 * Works a job this worker leased: its items without an outcome in seq order, each through its kind's handler, the
 * lease renewed as it goes. Ends when every item has an outcome (`finished`), when the worker stops (the lease is
 * given back: `stopped`), or when the lease was lost to another worker (`lost`).
 */
export async function runJob(job: Job, o: JobRunOptions): Promise<JobRunEnd> {
  const kind = o.kinds.get(job.kind);
  if (!kind)
    return (await finishJob(o.pool, job, o.owner, o.now(), `No worker knows jobs of kind ${job.kind}`))
      ? 'failed'
      : 'lost';
  if (!Value.Check(kind.params, job.params))
    return (await finishJob(o.pool, job, o.owner, o.now(), 'The job’s parameters are not valid')) ? 'failed' : 'lost';
  let renewedAt = Date.now();
  let after = 0;
  const faults = new Map<number, number>();
  for (;;) {
    const items = await pendingItems(o.pool, job, o.batchSize, after);
    if (items.length === 0) return (await finishJob(o.pool, job, o.owner, o.now())) ? 'finished' : 'lost';
    for (const item of items) {
      if (!o.keepGoing()) {
        await releaseLease(o.pool, job, o.owner);
        return 'stopped';
      }
      if (Date.now() - renewedAt > o.leaseMs / 3) {
        if (!(await renewLease(o.pool, job, o.owner, new Date(o.now().getTime() + o.leaseMs)))) return 'lost';
        renewedAt = Date.now();
      }
      await o.beforeItem?.(job, item.seq);
      try {
        await runItem(o.pool, kind, job, item);
        after = item.seq;
      } catch (error) {
        o.onFault(error, job, item.seq);
        const count = (faults.get(item.seq) ?? 0) + 1;
        faults.set(item.seq, count);
        if (count >= MAX_FAULTS) {
          await settleAlone(o.pool, job, item.seq, { outcome: 'refused', reason: FAULT_REASON });
          after = item.seq;
        }
        break;
      }
    }
  }
}

/** One item through its handler; a refusal is written as the item's outcome, a fault is thrown. */
async function runItem(pool: pg.Pool, kind: JobKind<unknown, unknown>, job: Job, item: PendingItem): Promise<void> {
  if (!Value.Check(kind.input, item.input)) {
    await settleAlone(pool, job, item.seq, { outcome: 'skipped', reason: 'The item’s input is not valid.' });
    return;
  }
  const work: JobItemWork<unknown> = {
    seq: item.seq,
    subject: item.subject,
    input: item.input,
    claim: (sql) => claimItem(sql, job, item.seq),
    settle: async (sql, outcome) => {
      if (!(await settleItem(sql, job, item.seq, outcome)))
        throw new Error(`Job item ${item.seq} was settled without being claimed in its transaction`);
    },
  };
  try {
    await kind.run(job, work);
  } catch (error) {
    const reason = kind.refusalReason(error);
    if (reason === undefined) throw error;
    await settleAlone(pool, job, item.seq, { outcome: 'refused', reason });
  }
}

/** An outcome written by itself (a refusal: the change's transaction rolled back, so nothing was changed). */
async function settleAlone(pool: pg.Pool, job: Job, seq: number, outcome: ItemOutcome): Promise<void> {
  await withTransaction(pool, async (sql) => {
    if (await claimItem(sql, job, seq)) await settleItem(sql, job, seq, outcome);
  });
}
