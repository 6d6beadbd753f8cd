import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { MemoryRateLimitStore } from '../../src/ratelimit/memory-store.js';
import { RedisRateLimitStore } from '../../src/ratelimit/redis-store.js';
import type { BucketRequest, RateLimitStore } from '../../src/ratelimit/token-bucket.js';
import { REDIS_URL, redisSkipReason } from '../support/redis.js';

function buckets(id: string): BucketRequest[] {
  return [
    { id: `key:${id}`, scope: 'key', spec: { capacity: 5, refill_per_second: 1 } },
    { id: `key:${id}:leads:read`, scope: 'leads:read', spec: { capacity: 3, refill_per_second: 0.5 } },
  ];
}

async function drains(t: Test, store: RateLimitStore, id: string = randomUUID()) {
  const results = [];
  for (let i = 0; i < 4; i++) results.push(await store.take(buckets(id)));
  t.same(
    results.slice(0, 3).map((r) => r.allowed),
    [true, true, true],
    'the scope bucket allows its capacity',
  );
  t.same(
    results.slice(0, 3).map((r) => [r.constrained.scope, r.constrained.limit, r.constrained.remaining]),
    [
      ['leads:read', 3, 2],
      ['leads:read', 3, 1],
      ['leads:read', 3, 0],
    ],
    'headers describe the most constrained bucket',
  );
  const refused = results[3]!;
  t.equal(refused.allowed, false, 'then it refuses');
  t.equal(refused.constrained.scope, 'leads:read', 'naming the empty bucket');
  t.equal(refused.retryAfterSeconds, 2, 'a token comes back after 2 s at 0.5/s');
  t.equal(results[2]!.constrained.resetSeconds, 6, 'an empty 3-token bucket at 0.5/s is full after 6 s');
}

t.test('memory store: token buckets per key and scope, refilled by the clock', async (t) => {
  let now = 1_000_000;
  const store = new MemoryRateLimitStore(() => now);
  await drains(t, store, 'k1');
  now += 2000;
  t.equal((await store.take(buckets('k1'))).allowed, true, 'allowed again once refilled');
  t.equal((await store.take(buckets('k1'))).allowed, false, 'one token per 2 s');
  const other = await store.take(buckets('k2'));
  t.equal(other.allowed, true, 'another key has its own buckets');
  // A refused request takes nothing from the other buckets.
  now += 60_000;
  const key = [{ id: 'key:k3', scope: 'key', spec: { capacity: 2, refill_per_second: 0.001 } }];
  await store.take(key);
  await store.take(key);
  t.equal((await store.take(key)).allowed, false);
});

t.test('redis store: several processes share one limit', { skip: await redisSkipReason() }, async (t) => {
  const a = new RedisRateLimitStore(REDIS_URL, `test:${randomUUID()}:`);
  t.teardown(() => a.close());
  await drains(t, a);

  const prefix = `test:${randomUUID()}:`;
  const first = new RedisRateLimitStore(REDIS_URL, prefix);
  const second = new RedisRateLimitStore(REDIS_URL, prefix);
  t.teardown(async () => {
    await first.close();
    await second.close();
  });
  const spec = [{ id: 'key:shared', scope: 'key', spec: { capacity: 10, refill_per_second: 0.001 } }];
  const results = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 ? first : second).take(spec)));
  t.equal(
    results.filter((r) => r.allowed).length,
    10,
    'two stores on one Redis allow exactly the capacity between them',
  );
});

async function peeks(t: Test, store: RateLimitStore, id: string) {
  const spec = [{ id, scope: 'failed_authentication', spec: { capacity: 2, refill_per_second: 0.001 } }];
  t.match(await store.peek(spec), { allowed: true, constrained: { remaining: 1 } }, 'a new bucket is full');
  for (let i = 0; i < 5; i++) await store.peek(spec);
  t.equal((await store.take(spec)).allowed, true, 'looking took nothing');
  t.equal((await store.take(spec)).allowed, true);
  const empty = await store.peek(spec);
  t.equal(empty.allowed, false, 'an empty bucket is seen as refusing');
  t.ok(empty.retryAfterSeconds >= 1, 'with the time until a token comes back');
  t.equal((await store.take(spec)).allowed, false, 'and taking agrees');
}

t.test('memory store: peek tells what take would answer, taking nothing', async (t) => {
  await peeks(t, new MemoryRateLimitStore(() => 5_000_000), 'auth-failures:203.0.113.1');
});

t.test(
  'redis store: peek tells what take would answer, taking nothing',
  { skip: await redisSkipReason() },
  async (t) => {
    const store = new RedisRateLimitStore(REDIS_URL, `test:${randomUUID()}:`);
    t.teardown(() => store.close());
    await peeks(t, store, 'auth-failures:203.0.113.1');
  },
);
