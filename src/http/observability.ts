import underPressure from '@fastify/under-pressure';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { poolTimedOut } from '../storage/postgres.js';
import { checkOperatorToken } from './admin-auth.js';
import { ApiError, overloaded } from './errors.js';
import type { AppServices } from '../bootstrap.js';
import type { TypedApp } from './typed-app.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** under-pressure's handler for one route (GET /metrics answers under pressure too). */
    pressureHandler?: () => void;
  }
}

/**
 * Load shedding: new requests answer 503 (Error shape, Retry-After) at once while the event loop lags or too many
 * requests already wait for a database connection; a request that waits for one longer than the pool's acquisition
 * timeout answers 503 too (see handleError). Registered before every other hook, so a shed request costs no lookup.
 */
export async function registerLoadShedding(app: TypedApp, services: AppServices): Promise<void> {
  const { config, metrics, pool } = services;
  await app.register(underPressure, {
    maxEventLoopDelay: config.maxEventLoopDelayMs,
    healthCheck: async () => pool.waitingCount < config.maxPoolWaiting,
    healthCheckInterval: 100,
    pressureHandler: async (request: FastifyRequest, reply: FastifyReply, type: string) => {
      reply.header('request-id', request.id);
      metrics.loadShed.inc({ cause: type === 'healthCheck' ? 'pool_waiting' : type });
      throw overloaded();
    },
  });
  app.addHook('onError', async (request, _reply, error) => {
    if (poolTimedOut(error)) metrics.loadShed.inc({ cause: 'pool_timeout' });
    if (error instanceof ApiError && error.statusCode === 429)
      metrics.rateLimited.inc({ scope: error.extras.scope ?? 'unknown' });
  });
}

const invalidMetricsToken = () => new ApiError(401, 'invalid_metrics_token', 'The metrics token is missing or wrong');

/**
 * Counts every answer by route template (never the raw path: ids would make unbounded label values) and status, and
 * serves `GET /metrics` when METRICS_TOKEN is set, to a bearer of that token only; wrong tokens count as failed
 * authentications of the address (docs/decisions.md).
 */
export function registerMetrics(app: TypedApp, services: AppServices): void {
  const { metrics } = services;
  app.addHook('onResponse', async (request, reply) => {
    const labels = {
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: String(reply.statusCode),
    };
    metrics.requests.inc(labels);
    metrics.requestDuration.observe(labels, reply.elapsedTime / 1000);
  });
  const token = services.config.metricsToken;
  if (!token) return;
  app.get(
    '/metrics',
    {
      schema: { hide: true },
      // Scrapes go on under pressure: that is when an operator needs them.
      config: { pressureHandler: () => undefined },
    },
    async (request, reply) => {
      await checkOperatorToken(request, token, services, invalidMetricsToken);
      return reply.type(metrics.contentType).send(await metrics.text());
    },
  );
}
