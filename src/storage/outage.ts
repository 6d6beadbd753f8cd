import { CommitOutcomeUnknown, connectionLost } from './transaction.js';

/** Node's codes for a server that cannot be reached at all: nothing listens, or the name or route is unknown. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * True when the database could not be reached or dropped the session: the server is down, restarting (SQLSTATE
 * 57P03, starting up or shutting down, and the rest of class 57P) or unreachable, or the connection broke. A
 * statement the server refused is never one, nor a loss after COMMIT was sent (`CommitOutcomeUnknown`). Looks
 * through `cause` and the errors of an `AggregateError` (Node's connection attempts to every address of a name).
 */
export function databaseUnreachable(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 4) return false;
  if (error instanceof CommitOutcomeUnknown) return false;
  const code = 'code' in error && typeof error.code === 'string' ? error.code : '';
  if (UNREACHABLE.has(code) || connectionLost(error)) return true;
  if (error instanceof AggregateError && error.errors.some((inner) => databaseUnreachable(inner, depth + 1)))
    return true;
  return 'cause' in error && databaseUnreachable(error.cause, depth + 1);
}

export interface OutageEnd {
  /** From the first failure seen to the first connection made again. */
  downMs: number;
  /** Failures seen during the outage (each a request answered 503, a worker's attempt, …). */
  failures: number;
}

/**
 * One database outage at a time, as this process sees it: it starts with the first failure that says the server is
 * unreachable and ends when a connection to it is made again. Its callers log its start and its end, once each,
 * rather than each of the thousands of requests refused in between.
 */
export class OutageTracker {
  private since: number | undefined;
  private failures = 0;

  private readonly now: () => number;
  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  /** Counts a failure; true when it is the first of a new outage (the one to log). */
  failed(): boolean {
    this.failures++;
    if (this.since !== undefined) return false;
    this.since = this.now();
    this.failures = 1;
    return true;
  }

  /** A connection was made: the outage in course, if any, is over. */
  connected(): OutageEnd | undefined {
    if (this.since === undefined) return undefined;
    const end = { downMs: this.now() - this.since, failures: this.failures };
    this.since = undefined;
    this.failures = 0;
    return end;
  }

  get ongoing(): boolean {
    return this.since !== undefined;
  }
}

/**
 * The database outage this process is in, if any. A process serves one database, so one tracker serves every pool
 * and request of it: the HTTP error handler counts the failures, the pools' connections end it (src/http/app.ts).
 */
export const databaseOutage = new OutageTracker();
