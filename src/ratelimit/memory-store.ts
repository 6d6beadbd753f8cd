import {
  decide,
  refill,
  type BucketRequest,
  type RateLimitStore,
  type TakeResult,
  type Tokens,
} from './token-bucket.js';

/** Buckets in this process's memory: right for one API process. */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly buckets = new Map<string, Tokens>();
  private sweeps = 0;

  private readonly clock: () => number;
  constructor(clock: () => number = Date.now) {
    this.clock = clock;
  }

  async take(requests: BucketRequest[]): Promise<TakeResult> {
    const now = this.clock();
    const tokens = requests.map((r) => refill(this.buckets.get(r.id), r.spec, now));
    const { after, result } = decide(requests, tokens);
    requests.forEach((r, i) => this.buckets.set(r.id, { tokens: after[i]!, at: now }));
    if (++this.sweeps % 10_000 === 0) this.sweep(now, requests);
    return result;
  }

  async peek(requests: BucketRequest[]): Promise<TakeResult> {
    const now = this.clock();
    return decide(
      requests,
      requests.map((r) => refill(this.buckets.get(r.id), r.spec, now)),
    ).result;
  }

  /** Drops buckets idle long enough to be full again, so memory stays bounded by active keys. */
  private sweep(now: number, recent: BucketRequest[]): void {
    const longest = Math.max(...recent.map((r) => r.spec.capacity / r.spec.refill_per_second)) * 1000;
    for (const [id, state] of this.buckets) if (now - state.at > Math.max(longest, 3_600_000)) this.buckets.delete(id);
  }

  async close(): Promise<void> {}
}
