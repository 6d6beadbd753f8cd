import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type pg from 'pg';
import type { Config } from '../config.js';
import type { EventStore } from '../events/event-store.js';
import type { RateLimitStore } from '../ratelimit/token-bucket.js';
import type { SecretBox } from '../shared/secret-box.js';
import type { WorkspaceCache } from '../workspaces/repository.js';
import type { KeyLookupCache } from '../keys/key-cache.js';
import type { Metrics } from '../observability/metrics.js';

/** What routes and commands are given: the edges where I/O happens. */
export interface AppServices {
  config: Config;
  pool: pg.Pool;
  store: EventStore;
  workspaces: WorkspaceCache;
  /** Recent key lookups, dropped on every auth change. */
  keys: KeyLookupCache;
  rateLimits: RateLimitStore;
  secretBox: SecretBox;
  /** Prometheus metrics of this process (GET /metrics). */
  metrics: Metrics;
  /** The clock; tests move it. */
  now: () => Date;
}

export type TypedApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;
