import { randomUUID } from 'node:crypto';
import pRetry, { AbortError } from 'p-retry';
import type { FastifyRequest } from 'fastify';
import type { EventStore, StoreTransaction, TransactOptions } from '../events/event-store.js';
import { ErasedStreamError, WrongExpectedRevisionError, type Actor, type CommandContext } from '../events/types.js';
import { Refusal } from '../domain/refusal.js';
import { PgCode, pgErrorCode } from '../storage/postgres.js';

/** Another writer got to a stream first, or the database broke a deadlock or a serialization conflict: decide again. */
function retryable(error: unknown): boolean {
  return (
    error instanceof WrongExpectedRevisionError ||
    pgErrorCode(error) === PgCode.deadlockDetected ||
    pgErrorCode(error) === PgCode.serializationFailure
  );
}

/**
 * Runs a command in one event-store transaction, retrying when another writer got to a stream first (or the
 * database reports a deadlock or serialization failure): the command then re-reads state and decides again.
 * The first attempt runs directly; p-retry takes over only after a conflict, so a request that meets none does not
 * pay for setting it up.
 */
export async function runCommand<T>(
  store: EventStore,
  context: CommandContext,
  streams: string[],
  work: (tx: StoreTransaction) => Promise<T>,
  options?: TransactOptions,
): Promise<T> {
  try {
    return await store.transact(context, streams, work, options);
  } catch (error) {
    if (!retryable(error)) throw refusal(error);
  }
  return pRetry(
    async () => {
      try {
        return await store.transact(context, streams, work, options);
      } catch (error) {
        if (!retryable(error)) throw new AbortError(error instanceof Error ? error : new Error(String(error)));
        throw error;
      }
    },
    // Five more attempts, the first of them at once (the conflicting writer has committed), then backing off.
    { retries: 4, minTimeout: 5, maxTimeout: 100, randomize: true },
  ).catch((error: unknown) => {
    throw refusal(error);
  });
}

/** The domain refusal a store error stands for: personal data for an erased person is 409 lead_erased. */
function refusal(error: unknown): unknown {
  if (error instanceof ErasedStreamError)
    return new Refusal('conflict', 'lead_erased', 'This lead was erased: it takes no personal data');
  return error;
}

/** The command context of an API request: the calling key as actor, the request id as correlation id. */
export function contextFromRequest(request: FastifyRequest, now: Date): CommandContext {
  const auth = request.auth;
  if (!auth) throw new Error('contextFromRequest needs an authenticated request');
  return {
    tenantId: auth.workspace.id,
    sandbox: auth.sandbox,
    metadata: {
      actor: { type: 'key', key_id: auth.key.id, key_name: auth.key.name },
      correlation_id: String(request.id),
    },
    now,
  };
}

/** The command context of a workspace-UI operation (CLI or admin interface). */
export function staffContext(tenantId: string, sandbox: boolean, actor: Actor, now: Date): CommandContext {
  return { tenantId, sandbox, metadata: { actor, correlation_id: randomUUID() }, now };
}
