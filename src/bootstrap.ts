import type { Config } from './config.js';
import { PostgresEventStore } from './events/postgres-event-store.js';
import type { AppServices } from './http/services.js';
import { Metrics } from './observability/metrics.js';
import { projections } from './projections/index.js';
import { MemoryRateLimitStore } from './ratelimit/memory-store.js';
import { RedisRateLimitStore } from './ratelimit/redis-store.js';
import { loadSecretBox } from './shared/secret-box.js';
import type { Database } from './storage/database.js';
import { measureFanOutLag } from './subscribers/fanout-lag.js';
import { deliveryBacklog } from './webhooks/deliveries.js';
import { WorkspaceCache } from './workspaces/repository.js';
import { KeyLookupCache } from './keys/key-cache.js';

/** Wires the edges (database, Redis, encryption key, clock) into the services routes and commands use. */
export async function createServices(
  config: Config,
  db: Database,
  now: () => Date = () => new Date(),
): Promise<AppServices> {
  const store = new PostgresEventStore(db.pool, projections);
  const metrics = new Metrics();
  metrics.observe({
    poolWaiting: () => db.pool.waitingCount,
    sharedTransactions: () => store.sharedTransactionLoad(),
    deliveryBacklog: () => deliveryBacklog(db.pool, now()),
    fanOutLag: () => measureFanOutLag(db.pool, now()),
  });
  return {
    config,
    pool: db.pool,
    store,
    workspaces: new WorkspaceCache(db.pool),
    keys: new KeyLookupCache(),
    rateLimits: config.redisUrl ? new RedisRateLimitStore(config.redisUrl) : new MemoryRateLimitStore(),
    secretBox: await loadSecretBox(config),
    metrics,
    now,
  };
}
