import Fastify, { type FastifyInstance, type FastifyServerOptions, type onRequestAsyncHookHandler } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { apiAjv as ajv } from './api-ajv.js';
import { authenticate, type AuthContext, type AuthDeps, type RouteAuth } from './auth.js';
import { withEdgeChecks } from './edge-values.js';
import { ApiError, handleError, handleFrameworkError, MAX_PARAM_LENGTH, newRequestId } from './errors.js';
import { databaseOutage } from '../storage/outage.js';
import { readWithinLimit } from './lingering-close.js';
import { LastUseRecorder } from '../keys/last-use.js';
import { bindRequestLog, loggerOptions, RequestLog } from './logging.js';
import { registerLoadShedding, registerMetrics } from './observability.js';
import { registerPublicDocument } from './openapi.js';
import { registerRoutes } from './routes/index.js';
import { answerUnrouted } from './unrouted.js';
import { SchemaCompilations, serializersOnFirstUse } from './schema-compilation.js';
import type { AppServices } from '../bootstrap.js';
import type { Config } from '../config.js';
import type { TypedApp } from './typed-app.js';
import { answerClientError, answerExpectation, closeUnusedConnections, jsonBodyParser } from './wire.js';

export { loggerOptions } from './logging.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
  interface FastifyRequest {
    auth: AuthContext | null;
    /** The Origin a public key was checked against: its answers, refusals included, are readable by that page. */
    corsOrigin: string | null;
  }
}

/**
 * fastify 5.12 turns a hop count into "trust no hop" (so every client would have the proxy's address): a count is
 * given as the trust function it stands for, the nearest `hops` hops (docs/decisions.md, "Authentication that no neighbour can spoil").
 */
function proxyTrust(setting: Config['trustProxy']): false | string[] | ((address: string, hop: number) => boolean) {
  return typeof setting === 'number' ? (_address, hop) => hop < setting : setting;
}

/**
 * Each route with a `config.auth` rule gets its own onRequest hook, ahead of any hook of its own, built once with the
 * rule and its dependencies: no request reads its route's options or builds them again.
 */
function registerAuthentication(app: TypedApp, services: AppServices): void {
  // Read from the services at each use: tests replace a service (the rate-limit store, say) after the build.
  const deps: AuthDeps = {
    get sql() {
      return services.pool;
    },
    get keys() {
      return services.keys;
    },
    get workspaces() {
      return services.workspaces;
    },
    get rateLimits() {
      return services.rateLimits;
    },
    get failureLimit() {
      return services.config.authFailureLimit;
    },
    get now() {
      return services.now;
    },
  };
  const lastUse = new LastUseRecorder();
  app.addHook('onRoute', (route) => {
    const rule = route.config?.auth;
    if (!rule) return;
    const check: onRequestAsyncHookHandler = async (request) => {
      request.auth = await authenticate(request, rule, deps);
      bindRequestLog(request.log, {
        tenant_id: request.auth.workspace.id,
        key_id: request.auth.key.id,
        sandbox: request.auth.sandbox,
      });
      // Only a request that passed every check is a use; the write is not awaited.
      lastUse.record(services.pool, request.auth.key.id, services.now(), request.log);
    };
    const own = route.onRequest === undefined ? [] : [route.onRequest].flat();
    route.onRequest = [check, ...own];
  });
}

export interface BuildOptions {
  logger?: FastifyServerOptions['logger'];
  /** Readiness: false while starting or shutting down. */
  isReady?: () => boolean;
}

export async function buildApp(services: AppServices, options: BuildOptions = {}): Promise<TypedApp> {
  const app = createInstance(services, options);
  // In this order: hooks run in the order they are added, and the onRoute hooks must be in place before the routes.
  setBodyHandling(app, services.config.bodyLimitBytes);
  setRequestFieldsAndErrors(app);
  await registerLoadShedding(app, services);
  registerMetrics(app, services);
  registerAuthentication(app, services);
  registerShellHooks(app);
  await registerPublicDocument(app, services.config);
  registerProbes(app, services, options.isReady);
  logOutageEnds(app, services);
  await registerRoutes(app, services);
  return app;
}

/** fastify with this service's server options: its logging, limits, proxy trust and refusals in the Error shape. */
function createInstance(services: AppServices, options: BuildOptions): TypedApp {
  const compilations = new SchemaCompilations();
  const app = Fastify({
    logger: options.logger ?? loggerOptions(services.config.logLevel),
    genReqId: newRequestId,
    logController: new RequestLog(),
    bodyLimit: services.config.bodyLimitBytes,
    trustProxy: proxyTrust(services.config.trustProxy),
    // Requests arriving while the server closes get the Error body from the shell's onRequest hook, not fastify's own.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    // Refusals before a route exists answer in the Error shape too: the router's, and Node's HTTP parser's.
    frameworkErrors: handleFrameworkError,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // fastify calls it bound to the instance (its type does not say so).
    clientErrorHandler(this: FastifyInstance, error, socket) {
      answerClientError(this.log, error, socket);
    },
    // Node would answer a missing Host with an empty 400; the shell's onRequest hook refuses it with the Error body.
    http: { requireHostHeader: false },
    schemaController: { compilersFactory: { buildSerializer: serializersOnFirstUse(compilations) } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.decorate('schemaCompilations', compilations);
  app.server.on('checkExpectation', answerExpectation);
  closeUnusedConnections(app);
  return app;
}

/** How bodies, query strings and paths are parsed and validated. */
function setBodyHandling(app: TypedApp, bodyLimit: number): void {
  // One body parser, for JSON; fastify's text/plain parser goes, so any other type is 415 before validation.
  const parseJsonText = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', readWithinLimit(bodyLimit, jsonBodyParser(parseJsonText)));

  // Bodies are validated exactly (no coercion, unknown properties refused by their schemas); query strings and
  // paths arrive as text, so they are coerced to the schema's types.
  const bodyAjv = ajv({ coerceTypes: false });
  const textAjv = ajv({ coerceTypes: true });
  // Every part also goes through the edge checks: no NUL or unpaired surrogate in any string or key, no infinite
  // number; uuids in paths and queries are lowercased (src/http/edge-values.ts).
  const onFirstUse = app.schemaCompilations.onFirstUse.bind(app.schemaCompilations);
  app.setValidatorCompiler(({ schema, httpPart }) =>
    httpPart === 'body'
      ? withEdgeChecks(
          onFirstUse(() => bodyAjv.compile(schema)),
          schema,
          false,
        )
      : withEdgeChecks(
          onFirstUse(() => textAjv.compile(schema)),
          schema,
          true,
        ),
  );
}

/** The request's own fields, and the Error body for a thrown error and for a path or method no route has. */
function setRequestFieldsAndErrors(app: TypedApp): void {
  app.decorateRequest('auth', null);
  app.decorateRequest('corsOrigin', null);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(answerUnrouted(app));
}

/**
 * The hooks around every request: its request-id header, the Host and shutdown refusals, the rate-limit headers, and
 * `connection: close` while the server closes.
 */
function registerShellHooks(app: TypedApp): void {
  // While closing, answers in flight end their keep-alive connection, so shutdown does not wait out keep-alive timeouts.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('request-id', request.id);
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined)
      return done(new ApiError(400, 'invalid_request', 'HTTP/1.1 requests need a Host header'));
    if (closing)
      return done(
        new ApiError(503, 'shutting_down', 'The service is restarting; retry in a moment', {}, { 'retry-after': '1' }),
      );
    done();
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    const status = reply.statusCode;
    // The spec says both "every answer" and "every 2xx answer except 204": every answer with a body given after the
    // key's buckets were taken carries them, refusals included, so a client sees what it has left either way.
    if (request.auth && status !== 204 && payload !== undefined && payload !== null && payload !== '') {
      reply.header('ratelimit-limit', request.auth.rate.limit);
      reply.header('ratelimit-remaining', request.auth.rate.remaining);
      reply.header('ratelimit-reset', request.auth.rate.resetSeconds);
    }
    done(null, payload);
  });
}

/** A database outage's end, logged once with how long it lasted (its start is logged by handleError). */
function logOutageEnds(app: TypedApp, services: AppServices): void {
  services.pool.on('connect', () => {
    const end = databaseOutage.connected();
    if (end) app.log.warn({ down_ms: end.downMs, failures: end.failures }, 'the database can be reached again');
  });
}

/** Liveness and readiness, outside the public document. */
function registerProbes(app: TypedApp, services: AppServices, isReady: BuildOptions['isReady']): void {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    if (isReady && !isReady()) return reply.status(503).send({ status: 'not_ready' });
    try {
      await services.pool.query('SELECT 1');
    } catch {
      throw new ApiError(503, 'not_ready', 'The database cannot be reached');
    }
    return { status: 'ready' };
  });
}
