import type { FastifyReply } from 'fastify';
import type { Queryable } from '../storage/postgres.js';
import { requestOrigin } from './auth.js';
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

/**
 * A preflight carries no key, so it can only ask whether some public key that is neither revoked nor expired allows
 * the origin (in either mode, in any workspace). The actual request is then checked against its own key.
 */
export async function originAllowedByAnyPublicKey(sql: Queryable, origin: string, now: Date): Promise<boolean> {
  const result = await sql.query<{ allowed: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM api_keys
        WHERE kind = 'public' AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)
          AND 'leads:create' = ANY (scopes) AND allowed_origins @> ARRAY[$1::text]
     ) AS allowed`,
    [origin, now],
  );
  return result.rows[0]?.allowed ?? false;
}

/** CORS for the browser endpoints: preflight routes, and the headers of actual answers. */
export function registerCors(app: TypedApp, services: AppServices): void {
  for (const [url, rule] of Object.entries(BROWSER_ROUTES)) {
    app.options(url, { schema: { hide: true } }, async (request, reply) => {
      appendVary(reply, 'Origin', 'Access-Control-Request-Method', 'Access-Control-Request-Headers');
      const origin = requestOrigin(request);
      if (!origin || !(await originAllowedByAnyPublicKey(services.pool, origin, services.now()))) {
        throw new ApiError(
          403,
          'origin_not_allowed',
          'The request origin is not among the allowed origins of any public key',
        );
      }
      reply.header('access-control-allow-origin', origin);
      reply.header('access-control-allow-methods', rule.method);
      if (rule.headers.length > 0) reply.header('access-control-allow-headers', rule.headers.join(', '));
      reply.header('access-control-max-age', String(PREFLIGHT_MAX_AGE_SECONDS));
      return reply.status(204).send();
    });
  }

  app.addHook('onSend', async (request, reply, payload) => {
    if (request.method === 'OPTIONS') return payload;
    const route = request.routeOptions.url;
    // The answer of a browser endpoint depends on the Origin, whether or not it carries the CORS headers.
    if (route !== undefined && route in BROWSER_ROUTES) appendVary(reply, 'Origin');
    const origin = request.corsOrigin;
    if (origin) {
      reply.header('access-control-allow-origin', origin);
      reply.header('access-control-expose-headers', EXPOSED_HEADERS.join(', '));
    }
    return payload;
  });
}
