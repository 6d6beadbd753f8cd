import type { BucketSpec } from '../workspaces/workspace.js';

export interface BucketRequest {
  /** Identity of the bucket, e.g. `key:<id>` or `key:<id>:leads:read`. */
  id: string;
  /** What the bucket limits, reported as `scope` in a 429 (`key` or the scope name). */
  scope: string;
  spec: BucketSpec;
}

export interface BucketState {
  scope: string;
  limit: number;
  remaining: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
}

export interface TakeResult {
  allowed: boolean;
  /** The bucket to report in headers: the refusing one, else the one with the fewest requests left. */
  constrained: BucketState;
  /** Seconds until a request would be allowed (0 when allowed). */
  retryAfterSeconds: number;
}

/** Takes one token from every bucket, or from none when any is empty. Stores hold buckets in memory or in Redis. */
export interface RateLimitStore {
  take(buckets: BucketRequest[]): Promise<TakeResult>;
  /** What `take` would answer now, taking nothing (a bucket that was never taken from is full). */
  peek(buckets: BucketRequest[]): Promise<TakeResult>;
  close(): Promise<void>;
}

export interface Tokens {
  tokens: number;
  /** Milliseconds since the epoch of the last refill. */
  at: number;
}

export function refill(state: Tokens | undefined, spec: BucketSpec, now: number): number {
  if (!state) return spec.capacity;
  return Math.min(spec.capacity, state.tokens + (Math.max(0, now - state.at) / 1000) * spec.refill_per_second);
}

export function describe(scope: string, spec: BucketSpec, tokens: number): BucketState {
  return {
    scope,
    limit: spec.capacity,
    remaining: Math.max(0, Math.floor(tokens)),
    resetSeconds: Math.ceil((spec.capacity - tokens) / spec.refill_per_second),
  };
}

/** The pure decision shared by both stores: given each bucket's refilled tokens, allow and pick what to report. */
export function decide(
  buckets: BucketRequest[],
  tokens: number[],
): { allowed: boolean; after: number[]; result: TakeResult } {
  const refusing = buckets.findIndex((_, i) => tokens[i]! < 1);
  const allowed = refusing === -1;
  const after = allowed ? tokens.map((t) => t - 1) : tokens;
  const states = buckets.map((b, i) => describe(b.scope, b.spec, after[i]!));
  let index = refusing;
  if (allowed) {
    index = 0;
    states.forEach((s, i) => {
      const best = states[index]!;
      if (s.remaining < best.remaining || (s.remaining === best.remaining && s.limit < best.limit)) index = i;
    });
  }
  const retryAfterSeconds = allowed
    ? 0
    : Math.max(1, Math.ceil((1 - tokens[refusing]!) / buckets[refusing]!.spec.refill_per_second));
  return { allowed, after, result: { allowed, constrained: states[index]!, retryAfterSeconds } };
}
