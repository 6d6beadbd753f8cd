import underPressure from '@fastify/under-pressure';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Metrics } from '../observability/metrics.js';
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

type Labels = { method: string; route: string; status: string };
type AnswerHook = (request: FastifyRequest, reply: FastifyReply, done: () => void) => void;

/** An onResponse hook counting a route's answers; its label sets are made once per method and status. */
function countAnswers(metrics: Metrics, route: string): AnswerHook {
  const labelSets = new Map<string, Map<number, Labels>>();
  return (request, reply, done) => {
    let byStatus = labelSets.get(request.method);
    if (!byStatus) labelSets.set(request.method, (byStatus = new Map()));
    let labels = byStatus.get(reply.statusCode);
    if (!labels) {
      labels = { method: request.method, route, status: String(reply.statusCode) };
      byStatus.set(reply.statusCode, labels);
    }
    metrics.requests.inc(labels);
    metrics.requestDuration.observe(labels, reply.elapsedTime / 1000);
    done();
  };
}

const invalidMetricsToken = () => new ApiError(401, 'invalid_metrics_token', 'The metrics token is missing or wrong');

/**
 * Counts every answer by route template (never the raw path: ids would make unbounded label values) and status, and
 * serves `GET /metrics` when METRICS_TOKEN is set, to a bearer of that token only; wrong tokens count as failed
 * authentications of the address (docs/decisions.md).
 */
export function registerMetrics(app: TypedApp, services: AppServices): void {
  const { metrics } = services;
  // Each route counts its own answers, with its template bound once; answers no route chose count as `unmatched`.
  app.addHook('onRoute', (route) => {
    const count = countAnswers(metrics, route.url);
    const own = route.onResponse === undefined ? [] : [route.onResponse].flat();
    route.onResponse = [...own, count];
  });
  const unmatched = countAnswers(metrics, 'unmatched');
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) unmatched(request, reply, done);
    else done();
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
