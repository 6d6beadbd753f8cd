import type { FastifyReply, FastifyRequest } from 'fastify';

/** The request's Idempotency-Key (its form checked by the route's IdempotencyHeaders schema), or null without one. */
export function idempotencyKeyOf(request: FastifyRequest): string | null {
  const header = request.headers['idempotency-key'];
  return typeof header === 'string' ? header : null;
}

/** Marks an answer that repeats the first one given to its Idempotency-Key (`Idempotent-Replayed: true`). */
export function markReplayed(reply: FastifyReply, replayed: boolean): void {
  if (replayed) reply.header('idempotent-replayed', 'true');
}
