import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyServerOptions } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv, type Options as AjvOptions } from 'ajv';
import addFormats from 'ajv-formats';
import { authenticate, type AuthContext, type RouteAuth } from './auth.js';
import { ApiError, errorBody, handleError } from './errors.js';
import { registerRoutes } from './routes/index.js';
import type { AppServices, TypedApp } from './services.js';

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

const API_VERSION = '1.0.0';

function ajv(options: AjvOptions): Ajv {
  const instance = new Ajv({ allErrors: true, removeAdditional: false, useDefaults: false, strict: false, ...options });
  addFormats.default(instance);
  return instance;
}

/** Pino options: request ids, and never a key or secret in a log line. */
export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'req.query.key', '*.secret', '*.captcha_token'], censor: '[redacted]' },
    serializers: {
      req: (req: { method: string; url: string; ip?: string }) => ({ method: req.method, url: req.url.replace(/([?&]key=)[^&]*/, '$1[redacted]'), ip: req.ip }),
    },
  };
}

export interface BuildOptions {
  logger?: FastifyServerOptions['logger'];
  /** Readiness: false while starting or shutting down. */
  isReady?: () => boolean;
}

export async function buildApp(services: AppServices, options: BuildOptions = {}): Promise<TypedApp> {
  const app = Fastify({
    logger: options.logger ?? loggerOptions(services.config.logLevel),
    genReqId: () => `req_${randomBytes(12).toString('hex')}`,
    bodyLimit: services.config.bodyLimitBytes,
    trustProxy: services.config.trustProxy,
    // Requests arriving while the server closes get the Error body from the onRequest hook below, not fastify's own.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Bodies are validated exactly (no coercion, unknown properties refused by their schemas); query strings and
  // paths arrive as text, so they are coerced to the schema's types.
  const bodyAjv = ajv({ coerceTypes: false });
  const textAjv = ajv({ coerceTypes: true });
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : textAjv).compile(schema));

  app.decorateRequest('auth', null);
  app.decorateRequest('corsOrigin', null);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) => reply.status(404).send(errorBody(request, 'not_found', `No route ${request.method} ${request.url.split('?')[0]}`)));

  // While closing, answers in flight end their keep-alive connection, so shutdown does not wait out keep-alive timeouts.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('request-id', request.id);
    if (closing) throw new ApiError(503, 'shutting_down', 'The service is restarting; retry in a moment', {}, { 'retry-after': '1' });
    const rule = request.routeOptions.config.auth;
    if (!rule) return;
    request.auth = await authenticate(request, rule, { sql: services.pool, keys: services.keys, workspaces: services.workspaces, rateLimits: services.rateLimits, now: services.now });
    // The reply's logger writes the "request completed" line, so it gets the same bindings.
    request.log = reply.log = request.log.child({ tenant_id: request.auth.workspace.id, key_id: request.auth.key.id, sandbox: request.auth.sandbox });
  });

  app.addHook('onSend', async (request, reply, payload) => {
    if (closing) reply.header('connection', 'close');
    const status = reply.statusCode;
    // The spec says both "every answer" and "every 2xx answer except 204": every answer with a body given after the
    // key's buckets were taken carries them, refusals included, so a client sees what it has left either way.
    if (request.auth && status !== 204 && payload !== undefined && payload !== null && payload !== '') {
      reply.header('ratelimit-limit', request.auth.rate.limit);
      reply.header('ratelimit-remaining', request.auth.rate.remaining);
      reply.header('ratelimit-reset', request.auth.rate.resetSeconds);
    }
    return payload;
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'visa-crm-api', version: API_VERSION, description: 'Lead capture, lead sync, application status and webhooks.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'A secret or public API key' } } },
      security: [{ bearer: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    if (options.isReady && !options.isReady()) return reply.status(503).send({ status: 'not_ready' });
    try {
      await services.pool.query('SELECT 1');
    } catch {
      throw new ApiError(503, 'not_ready', 'The database cannot be reached');
    }
    return { status: 'ready' };
  });

  await registerRoutes(app, services);
  return app;
}
