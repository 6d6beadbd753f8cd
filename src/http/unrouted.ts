import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody } from './errors.js';

/** The methods some route of `app` answers at this concrete path (fastify's own router decides, as for a request). */
export function allowedMethods(app: FastifyInstance, path: string): string[] {
  return app.supportedMethods.filter((method) => app.findRoute({ method: method as 'GET', url: path }) !== null);
}

/**
 * The answer to a request no route took: 405 with `Allow` when the path is known under other methods (RFC 9110
 * 15.5.6), else 404; both in the Error shape.
 */
export function answerUnrouted(app: FastifyInstance) {
  return (request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const path = request.url.split('?')[0]!;
    const allowed = allowedMethods(app, path).filter((method) => method !== request.method);
    if (allowed.length === 0)
      return reply.status(404).send(errorBody(request, 'not_found', `No route ${request.method} ${path}`));
    reply.header('allow', allowed.join(', '));
    return reply
      .status(405)
      .send(
        errorBody(
          request,
          'method_not_allowed',
          `${request.method} is not allowed on ${path}; it answers ${allowed.join(', ')}`,
        ),
      );
  };
}
