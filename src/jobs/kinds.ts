import type { Static, TSchema } from 'typebox';
import type { Queryable } from '../storage/postgres.js';
import type { ItemOutcome, Job } from './jobs.js';

/** A job as its kind's handler sees it: the parameters checked against the kind's schema. */
export type TypedJob<P> = Omit<Job, 'params'> & { params: P };

/**
 * One item handed to its kind's handler. The handler does the item's change in one transaction that begins with
 * `claim` and ends with `settle`, so the change and the outcome commit together (or neither does).
 */
export interface JobItemWork<I> {
  readonly seq: number;
  readonly subject: string | null;
  readonly input: I;
  /**
   * The first statement of the change's transaction (after the locks the change takes first): false when the item
   * has an outcome already (another worker did it) or the job ended: change nothing then.
   */
  claim(sql: Queryable): Promise<boolean>;
  /** Writes the outcome, in the same transaction as the change. */
  settle(sql: Queryable, outcome: ItemOutcome): Promise<void>;
}

/**
 * Several items handed to a kind's `runBatch`, to be done in one transaction: `claim` locks them all first (the seqs
 * that still have no outcome: do only those), `settle` writes the outcomes of those done, in the same transaction.
 */
export interface JobBatchWork<I> {
  readonly items: readonly JobItemWork<I>[];
  claim(sql: Queryable): Promise<ReadonlySet<number>>;
  settle(sql: Queryable, outcomes: readonly (readonly [number, ItemOutcome])[]): Promise<void>;
}

/**
 * A kind of job: the schemas of its parameters and of each item's input, and its handler. Handlers are methods, so a
 * kind of any parameters fits a registry of kinds of unknown ones; the runner checks both schemas before calling.
 */
export interface JobKind<P, I> {
  readonly kind: string;
  readonly params: TSchema;
  readonly input: TSchema;
  /** Does one item: claim, change, settle in one transaction; throws a refusal for an item it may not do. */
  run(job: TypedJob<P>, item: JobItemWork<I>): Promise<void>;
  /**
   * Optional: several items (in seq order) in one transaction, claimed together first, each changed, and settled
   * together last (a refusal of one settled as refused). Saves the round trips of a transaction per item; if it throws, the runner does the
   * same items one by one with `run`.
   */
  runBatch?(job: TypedJob<P>, batch: JobBatchWork<I>): Promise<void>;
  /** The reason, in words, when `error` is a refusal of the item (recorded as its outcome); undefined for a fault. */
  refusalReason(error: unknown): string | undefined;
}

/** The kinds a worker runs, by name. */
export type JobKinds = ReadonlyMap<string, JobKind<unknown, unknown>>;

/** A kind whose parameter and input types are read from its schemas. */
export function defineJobKind<PS extends TSchema, IS extends TSchema>(kind: {
  kind: string;
  params: PS;
  input: IS;
  run(job: TypedJob<Static<PS>>, item: JobItemWork<Static<IS>>): Promise<void>;
  runBatch?(job: TypedJob<Static<PS>>, batch: JobBatchWork<Static<IS>>): Promise<void>;
  refusalReason(error: unknown): string | undefined;
}): JobKind<Static<PS>, Static<IS>> {
  return kind;
}

export function jobKinds(kinds: readonly JobKind<unknown, unknown>[]): JobKinds {
  return new Map(kinds.map((k) => [k.kind, k]));
}
