import { personOfNewStream } from './domain/streams.js';
import path from 'node:path';
import type pg from 'pg';
import type { DocumentServices } from './commands/documents/document-commands.js';
import { ClamdScanner, parseClamdAddress } from './documents/clamd.js';
import { DiskDocumentStorage } from './documents/storage.js';
import type { Config } from './config.js';
import type { EventStore } from './events/event-store.js';
import { PostgresEventStore } from './events/postgres-event-store.js';
import { rewriteDerivedKeyRows } from './events/person-key-rows.js';
import { Metrics } from './observability/metrics.js';
import { KeyLookupCache } from './keys/key-cache.js';
import { projections } from './projections/index.js';
import { MemoryRateLimitStore } from './ratelimit/memory-store.js';
import { RedisRateLimitStore } from './ratelimit/redis-store.js';
import type { RateLimitStore } from './ratelimit/token-bucket.js';
import { PersonalDataKeys } from './events/personal-data.js';
import { loadSecretBox, type SecretBox } from './shared/secret-box.js';
import { directConnections, type Database, type DirectConnections } from './storage/database.js';
import { measureFanOutLag } from './subscribers/fanout-lag.js';
import { deliveryBacklog } from './webhooks/deliveries.js';
import { systemWebhookRuntime, type WebhookRuntime } from './webhooks/runtime.js';
import { WorkspaceCache } from './workspaces/repository.js';

/**
 * The service container: the edges where I/O happens, given to routes, commands, workers and the CLI. Defined here,
 * with the composition root that builds it, so every layer can name it (as a type) without importing the HTTP layer.
 */
export interface AppServices {
  config: Config;
  pool: pg.Pool;
  /** Connections to the server itself (DATABASE_DIRECT_URL), only for what needs a session of its own: LISTEN. */
  direct: DirectConnections;
  /** Whether statements may be prepared by name: on connections straight to PostgreSQL, not behind a transaction pooler. */
  namedStatements: boolean;
  store: EventStore;
  workspaces: WorkspaceCache;
  /** Recent key lookups, dropped on every auth change. */
  keys: KeyLookupCache;
  rateLimits: RateLimitStore;
  secretBox: SecretBox;
  /** The data keys of crypto-shredding (personal values in the event log; src/events/personal-data.ts). */
  personalData: PersonalDataKeys;
  /** How webhook code resolves names and which certificate authorities it trusts (tests set their own). */
  webhooks: WebhookRuntime;
  /** Prometheus metrics of this process (GET /metrics). */
  metrics: Metrics;
  /** Document files and the virus scanner they pass through. */
  documents: DocumentServices;
  /** The clock; tests move it. */
  now: () => Date;
}

/** Wires the edges (database, Redis, encryption key, clock) into the services routes and commands use. */
export async function createServices(
  config: Config,
  db: Database,
  now: () => Date = () => new Date(),
): Promise<AppServices> {
  const secretBox = await loadSecretBox(config);
  const personalData = PersonalDataKeys.of(secretBox);
  await rewriteDerivedKeyRows(db.pool, personalData);
  // Behind a transaction pooler (DATABASE_DIRECT_URL names the server apart), statements stay unnamed.
  const namedStatements = db.direct === undefined;
  const store = new PostgresEventStore(db.pool, projections, {
    personal: personalData,
    personOf: personOfNewStream,
    namedStatements,
  });
  const metrics = new Metrics();
  metrics.observe({
    poolWaiting: () => db.pool.waitingCount,
    deliveryBacklog: () => deliveryBacklog(db.pool, now()),
    fanOutLag: () => measureFanOutLag(db.pool, now()),
  });
  return {
    config,
    pool: db.pool,
    direct: directConnections(db),
    namedStatements,
    store,
    workspaces: new WorkspaceCache(db.pool),
    keys: new KeyLookupCache(),
    rateLimits: config.redisUrl ? new RedisRateLimitStore(config.redisUrl) : new MemoryRateLimitStore(),
    secretBox,
    personalData,
    metrics,
    webhooks: systemWebhookRuntime(),
    documents: documentServices(config),
    now,
  };
}

/** Documents are kept under DATA_DIR/documents and scanned by the clamd at CLAMD_ADDRESS. */
function documentServices(config: Config): DocumentServices {
  return {
    storage: new DiskDocumentStorage(path.join(config.dataDir, 'documents')),
    scanner: new ClamdScanner(parseClamdAddress(config.clamdAddress)),
  };
}
