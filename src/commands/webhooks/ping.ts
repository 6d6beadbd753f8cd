import type { AppServices } from '../../bootstrap.js';
import { endpointStream } from '../../domain/webhooks/endpoint.js';
import type { CommandContext } from '../../events/types.js';
import { IdempotencyKeyReusedError } from '../errors.js';
import {
  findAnswer,
  idempotencyLock,
  requestHash,
  saveAnswer,
  type IdempotencyScope,
} from '../../intake/idempotency.js';
import { runCommand } from '../run-command.js';
import { appendTestEvent, domainErrors } from './endpoints.js';

/** The operation's name among the answers kept per Idempotency-Key (its operationId). */
export const PING_OPERATION = 'sendWebhookEndpointTest';

export interface PingAnswer {
  event_id: string;
  /** True when this is the first answer given again for the same Idempotency-Key: nothing new was sent. */
  replayed: boolean;
}

/**
 * POST /v1/webhooks/{id}/test: a webhook.test event for the endpoint of the key's workspace and mode, as the console,
 * the CLI and the admin interface send it (appendTestEvent). With an Idempotency-Key, a repeat within 24 hours for the
 * same endpoint answers the first event id and sends nothing; the same key for another endpoint is refused.
 */
export async function pingEndpoint(
  services: AppServices,
  context: CommandContext,
  id: string,
  idempotencyKey: string | null,
): Promise<PingAnswer> {
  if (idempotencyKey === null) {
    const sent = await domainErrors(() =>
      runCommand(services.store, context, [endpointStream(id)], (tx) => appendTestEvent(tx, context, id)),
    );
    return { ...sent, replayed: false };
  }
  const scope: IdempotencyScope = { tenantId: context.tenantId, sandbox: context.sandbox, operation: PING_OPERATION };
  const hash = requestHash({ endpoint_id: id });
  return domainErrors(() =>
    runCommand(
      services.store,
      context,
      [idempotencyLock(scope, idempotencyKey), endpointStream(id)],
      async (tx): Promise<PingAnswer> => {
        const first = await findAnswer(tx.sql, scope, idempotencyKey, context.now);
        if (first) {
          if (first.requestHash !== hash) throw new IdempotencyKeyReusedError();
          return { event_id: String(first.body.event_id), replayed: true };
        }
        const sent = await appendTestEvent(tx, context, id);
        await saveAnswer(tx.sql, scope, idempotencyKey, { requestHash: hash, status: 202, body: sent }, context.now);
        return { ...sent, replayed: false };
      },
    ),
  );
}
