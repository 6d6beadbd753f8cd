import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import type { Logger } from 'pino';
import { claimJob } from '../jobs/jobs.js';
import type { JobKinds } from '../jobs/kinds.js';
import { runJob, type JobRunOptions } from '../jobs/run-job.js';
import { PollingRunner } from './polling-runner.js';

export interface JobWorkerOptions {
  /** How often the worker looks for runnable jobs (made by other processes, or whose lease lapsed); 1 s. */
  pollIntervalMs?: number;
  /** How long a job's lease lasts without renewal; 30 s. A worker killed outright is resumed elsewhere after it. */
  leaseMs?: number;
  batchSize?: number;
  /** Items a kind that can (bulk lead changes) does in one transaction; 20. */
  itemsPerTransaction?: number;
  /** Called before each item (tests hold a job at an item). */
  beforeItem?: JobRunOptions['beforeItem'];
}

/**
 * Runs the console's jobs (bulk actions, imports): leases one runnable job at a time (FOR UPDATE SKIP LOCKED on the
 * job row, with lease_until), works its items in order and takes the next, until none is runnable. Any number of
 * processes may run one. stop() hands the job under way back at its next item, so another worker resumes it at once.
 */
export class JobWorker extends PollingRunner {
  private readonly services: { pool: pg.Pool; now: () => Date };
  private readonly kinds: JobKinds;
  private readonly log: Pick<Logger, 'error'>;
  private readonly options: JobWorkerOptions;
  private readonly owner = `${hostname()}:${process.pid}:${randomUUID()}`;

  constructor(
    services: { pool: pg.Pool; now: () => Date },
    kinds: JobKinds,
    log: Pick<Logger, 'error'>,
    options: JobWorkerOptions = {},
  ) {
    super(options.pollIntervalMs ?? 1000, (error) => log.error({ err: error }, 'jobs failed'));
    this.services = services;
    this.kinds = kinds;
    this.log = log;
    this.options = options;
  }

  protected async catchUp(): Promise<void> {
    const leaseMs = this.options.leaseMs ?? 30_000;
    const kinds = [...this.kinds.keys()];
    while (this.running) {
      const now = this.services.now();
      const job = await claimJob(this.services.pool, this.owner, now, new Date(now.getTime() + leaseMs), kinds);
      if (!job) return;
      await runJob(job, {
        pool: this.services.pool,
        kinds: this.kinds,
        owner: this.owner,
        now: this.services.now,
        leaseMs,
        batchSize: this.options.batchSize ?? 100,
        itemsPerTransaction: this.options.itemsPerTransaction ?? 20,
        keepGoing: () => this.running,
        beforeItem: this.options.beforeItem,
        // The job and item numbers only: an item's input may hold personal data.
        onFault: (error, faulted, seq) => this.log.error({ err: error, job: faulted.id, seq }, 'job item failed'),
      });
    }
  }
}
