import type { DoneFuncWithErrOrRes, FastifyReply, FastifyRequest } from 'fastify';
import { originAllowance } from '../keys/repository.js';
import { failed, failureGate, requestOrigin } from './auth.js';
import { ApiError } from './errors.js';
import type { AppServices } from '../bootstrap.js';
import type { TypedApp } from './typed-app.js';

/** The only endpoints a browser may call: with a public key, from one of the key's allowed origins. */
export const BROWSER_ROUTES: Readonly<Record<string, { method: 'GET' | 'POST'; headers: readonly string[] }>> = {
  '/v1/leads': { method: 'POST', headers: ['Authorization', 'Content-Type', 'Idempotency-Key'] },
  '/v1/widget/config': { method: 'GET', headers: [] },
};

export const EXPOSED_HEADERS = [
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'Retry-After',
  'Request-Id',
];
/** How long a browser may reuse a preflight answer; the actual request is checked against the key every time. */
export const PREFLIGHT_MAX_AGE_SECONDS = 600;

export function appendVary(reply: FastifyReply, ...names: string[]): void {
  const current = reply.getHeader('vary');
  const values =
    typeof current === 'string'
      ? current
          .split(',')
          .map((v) => v.trim())
          .filter(Boolean)
      : [];
  for (const name of names) if (!values.some((v) => v.toLowerCase() === name.toLowerCase())) values.push(name);
  reply.header('vary', values.join(', '));
}

const originRefused = () =>
  new ApiError(403, 'origin_not_allowed', 'The request origin is not among the allowed origins of any public key');

/**
 * A preflight carries no key, so it can only ask whether some public key that is neither revoked nor expired allows
 * the origin (in either mode, in any workspace); the actual request is then checked against its own key. The answer
 * per origin is cached with the key lookups (dropped on every auth change and key creation), and a refused origin
 * counts as a failed authentication of the client's address: once the address has used those up, a preflight that
 * would need a lookup answers 429 without one, so a flood of made-up origins costs the database no more than a flood
 * of made-up keys.
 */
async function allowedPreflightOrigin(request: FastifyRequest, services: AppServices): Promise<string> {
  const origin = requestOrigin(request);
  const deps = { rateLimits: services.rateLimits, failureLimit: services.config.authFailureLimit };
  // No readable Origin: nothing to look up, nothing counted (like a malformed key).
  if (!origin) throw originRefused();
  const now = services.now();
  const known = services.keys.originAllowed(origin, now.getTime());
  if (known === undefined) await failureGate(request, deps);
  const allowed = known ?? (await originAllowance(services.pool, origin, now, services.keys));
  if (!allowed) throw await failed(request, deps, originRefused);
  return origin;
}

/** CORS for the browser endpoints: preflight routes, and the headers of actual answers. */
export function registerCors(app: TypedApp, services: AppServices): void {
  for (const [url, rule] of Object.entries(BROWSER_ROUTES)) {
    app.options(url, { schema: { hide: true } }, async (request, reply) => {
      appendVary(reply, 'Origin', 'Access-Control-Request-Method', 'Access-Control-Request-Headers');
      const origin = await allowedPreflightOrigin(request, services);
      reply.header('access-control-allow-origin', origin);
      reply.header('access-control-allow-methods', rule.method);
      if (rule.headers.length > 0) reply.header('access-control-allow-headers', rule.headers.join(', '));
      reply.header('access-control-max-age', String(PREFLIGHT_MAX_AGE_SECONDS));
      return reply.status(204).send();
    });
  }

  // The answer of a browser endpoint depends on the Origin, whether or not it carries the CORS headers.
  app.addHook('onRoute', (route) => {
    if (!(route.url in BROWSER_ROUTES) || [route.method].flat().includes('OPTIONS')) return;
    const own = route.onSend === undefined ? [] : [route.onSend].flat();
    route.onSend = [...own, varyOnOrigin];
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    const origin = request.corsOrigin;
    if (origin && request.method !== 'OPTIONS') {
      reply.header('access-control-allow-origin', origin);
      reply.header('access-control-expose-headers', EXPOSED_HEADER_LIST);
    }
    done(null, payload);
  });
}

const EXPOSED_HEADER_LIST = EXPOSED_HEADERS.join(', ');

function varyOnOrigin(_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: DoneFuncWithErrOrRes) {
  appendVary(reply, 'Origin');
  done(null, payload);
}
