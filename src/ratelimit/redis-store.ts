import { Redis } from 'ioredis';
import { decide, type BucketRequest, type RateLimitStore, type TakeResult } from './token-bucket.js';

// Refills every bucket by Redis's own clock, takes one token from each only if all have one, and returns the
// refilled token counts (before taking) so the caller can describe the buckets with the same pure code as in memory.
// ARGV[1] is '1' to take, '0' to only look (nothing is written then).
const TAKE_SCRIPT = `
local take = ARGV[1] == '1'
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local n = #KEYS
local tokens = {}
local all = true
for i = 1, n do
  local capacity = tonumber(ARGV[(i - 1) * 2 + 2])
  local rate = tonumber(ARGV[(i - 1) * 2 + 3])
  local state = redis.call('HMGET', KEYS[i], 't', 'at')
  local t = capacity
  if state[1] then
    t = math.min(capacity, tonumber(state[1]) + math.max(0, now - tonumber(state[2])) / 1000 * rate)
  end
  tokens[i] = t
  if t < 1 then all = false end
end
for i = 1, n do
  if not take then break end
  local capacity = tonumber(ARGV[(i - 1) * 2 + 2])
  local rate = tonumber(ARGV[(i - 1) * 2 + 3])
  local t = tokens[i]
  if all then t = t - 1 end
  redis.call('HSET', KEYS[i], 't', tostring(t), 'at', tostring(now))
  redis.call('PEXPIRE', KEYS[i], math.ceil((capacity - t) / rate * 1000) + 1000)
end
local out = {}
for i = 1, n do out[i] = tostring(tokens[i]) end
return out
`;

/** Buckets in Redis: several API processes behind a balancer enforce one limit. */
export class RedisRateLimitStore implements RateLimitStore {
  private readonly redis: Redis;

  private readonly prefix;
  constructor(url: string, prefix = 'ratelimit:') {
    this.prefix = prefix;
    this.redis = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false });
    this.redis.defineCommand('takeTokens', { lua: TAKE_SCRIPT });
  }

  async take(requests: BucketRequest[]): Promise<TakeResult> {
    return this.run(requests, true);
  }

  async peek(requests: BucketRequest[]): Promise<TakeResult> {
    return this.run(requests, false);
  }

  private async run(requests: BucketRequest[], take: boolean): Promise<TakeResult> {
    const args = requests.flatMap((r) => [String(r.spec.capacity), String(r.spec.refill_per_second)]);
    const keys = requests.map((r) => this.prefix + r.id);
    // ioredis adds defined commands at run time; its typings do not know them.
    const raw = await (
      this.redis as unknown as { takeTokens(n: number, ...a: string[]): Promise<string[]> }
    ).takeTokens(keys.length, ...keys, take ? '1' : '0', ...args);
    return decide(requests, raw.map(Number)).result;
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
