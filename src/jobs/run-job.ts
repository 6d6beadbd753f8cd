import type pg from 'pg';
import { Value } from 'typebox/value';
import { withTransaction } from '../storage/postgres.js';
import {
  claimItem,
  claimItems,
  finishJob,
  pendingItems,
  releaseLease,
  renewLease,
  settleItem,
  settleItems,
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
  /** Items a kind with `runBatch` does in one transaction. */
  itemsPerTransaction: number;
  /** False once the worker is stopping: the job is handed back before the next transaction. */
  keepGoing: () => boolean;
  /** Called with a fault of an item (not a refusal), before it is tried again. */
  onFault: (error: unknown, job: Job, seq: number) => void;
  /** Called before each transaction with the seq of its first item (tests hold a job at an item here). */
  beforeItem?: (job: Job, seq: number) => Promise<void>;
}

/** An item whose handler failed this many times (faults, not refusals) is refused with the reason below. */
const MAX_FAULTS = 3;
const FAULT_REASON = 'Could not be done: the change failed three times, so it was left as it was.';

export type JobRunEnd = 'finished' | 'failed' | 'stopped' | 'lost';

/**
 * Works a job this worker leased: its items without an outcome in seq order, through its kind's handler (several to a
 * transaction when the kind can), the lease renewed as it goes. Ends when every item has an outcome (`finished`), when
 * the worker stops (the lease is given back: `stopped`), or when the lease was lost to another worker (`lost`).
 */
export async function runJob(job: Job, o: JobRunOptions): Promise<JobRunEnd> {
  const kind = o.kinds.get(job.kind);
  const unknown = !kind ? `No worker knows jobs of kind ${job.kind}` : undefined;
  const invalid = kind && !Value.Check(kind.params, job.params) ? 'The job’s parameters are not valid' : undefined;
  if (!kind || unknown || invalid)
    return (await finishJob(o.pool, job, o.owner, o.now(), unknown ?? invalid)) ? 'failed' : 'lost';
  let renewedAt = Date.now();
  let after = 0;
  const faults = new Map<number, number>();
  for (;;) {
    const items = await pendingItems(o.pool, job, o.batchSize, after);
    if (items.length === 0) return (await finishJob(o.pool, job, o.owner, o.now())) ? 'finished' : 'lost';
    let i = 0;
    while (i < items.length) {
      if (!o.keepGoing()) {
        await releaseLease(o.pool, job, o.owner);
        return 'stopped';
      }
      if (Date.now() - renewedAt > o.leaseMs / 3) {
        if (!(await renewLease(o.pool, job, o.owner, new Date(o.now().getTime() + o.leaseMs)))) return 'lost';
        renewedAt = Date.now();
      }
      const size = kind.runBatch && !faults.has(items[i]!.seq) ? o.itemsPerTransaction : 1;
      const group = items.slice(i, i + size);
      await o.beforeItem?.(job, group[0]!.seq);
      try {
        await runGroup(o.pool, kind, job, group);
        after = group[group.length - 1]!.seq;
        i += group.length;
      } catch (error) {
        const seq = group[0]!.seq;
        o.onFault(error, job, seq);
        const count = (faults.get(seq) ?? 0) + 1;
        faults.set(seq, count);
        if (group.length === 1 && count >= MAX_FAULTS) {
          await settleAlone(o.pool, job, seq, { outcome: 'refused', reason: FAULT_REASON });
          after = seq;
          i += 1;
        }
        // A group that failed is done again item by item (faults has its first seq), from the next read.
        if (group.length > 1 || count < MAX_FAULTS) break;
      }
    }
  }
}

function workOf(job: Job, item: PendingItem): JobItemWork<unknown> {
  return {
    seq: item.seq,
    subject: item.subject,
    input: item.input,
    claim: (sql) => claimItem(sql, job, item.seq),
    settle: async (sql, outcome) => {
      if (!(await settleItem(sql, job, item.seq, outcome)))
        throw new Error(`Job item ${item.seq} was settled without being claimed in its transaction`);
    },
  };
}

/** Items through their handler (in one transaction when several); an item's refusal is written as its outcome. */
async function runGroup(pool: pg.Pool, kind: JobKind<unknown, unknown>, job: Job, group: PendingItem[]): Promise<void> {
  const valid: PendingItem[] = [];
  for (const item of group)
    if (Value.Check(kind.input, item.input)) valid.push(item);
    else await settleAlone(pool, job, item.seq, { outcome: 'skipped', reason: 'The item’s input is not valid.' });
  if (valid.length === 0) return;
  if (valid.length > 1 && kind.runBatch) {
    const items = valid.map((item) => workOf(job, item));
    await kind.runBatch(job, {
      items,
      claim: (sql) =>
        claimItems(
          sql,
          job,
          valid.map((item) => item.seq),
        ),
      settle: async (sql, outcomes) => {
        if ((await settleItems(sql, job, outcomes)) !== outcomes.length)
          throw new Error(`Job items of ${job.id} were settled without being claimed in their transaction`);
      },
    });
    return;
  }
  for (const item of valid) {
    try {
      await kind.run(job, workOf(job, item));
    } catch (error) {
      const reason = kind.refusalReason(error);
      if (reason === undefined) throw error;
      await settleAlone(pool, job, item.seq, { outcome: 'refused', reason });
    }
  }
}

/** An outcome written by itself (a refusal: the change's transaction rolled back, so nothing was changed). */
async function settleAlone(pool: pg.Pool, job: Job, seq: number, outcome: ItemOutcome): Promise<void> {
  await withTransaction(pool, async (sql) => {
    if (await claimItem(sql, job, seq)) await settleItem(sql, job, seq, outcome);
  });
}
