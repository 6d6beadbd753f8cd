import { contextFromRequest } from '../../commands/run-command.js';
import { pingEndpoint } from '../../commands/webhooks/ping.js';
import { IdempotencyHeaders } from '../../schemas/lead.js';
import { idempotencyKeyOf, markReplayed } from '../idempotency-header.js';
import { answer, errorResponses } from '../schemas/error.js';
import { TestAnswer, WebhookIdParams } from '../schemas/webhook.js';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../typed-app.js';

/**
 * POST /v1/webhooks/{id}/test: what the console, the CLI and the admin interface do, for a secret key with
 * webhooks:manage. The key's mode names the endpoints it reaches (a test key its test endpoints), as for the other
 * webhook routes; rate-limited as they are; an Idempotency-Key repeated within 24 hours sends nothing new.
 */
export function registerWebhookTestRoute(app: TypedApp, services: AppServices): void {
  app.post(
    '/v1/webhooks/:id/test',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'sendWebhookEndpointTest',
        summary: 'Send a webhook.test event to this endpoint (to it alone, whatever kinds it subscribes to)',
        params: WebhookIdParams,
        headers: IdempotencyHeaders,
        response: {
          202: answer(
            TestAnswer,
            'The webhook.test event is queued for this endpoint; its delivery shows in the delivery log. A repeat with ' +
              'the same Idempotency-Key answers the first event id with `Idempotent-Replayed: true` and sends nothing.',
          ),
          ...errorResponses(400, 401, 402, 403, 404, 409, 429),
        },
      },
      config: { auth: { keys: 'secret', scope: 'webhooks:manage', feature: 'webhooks' } },
    },
    async (request, reply) => {
      const sent = await pingEndpoint(
        services,
        contextFromRequest(request, services.now()),
        request.params.id,
        idempotencyKeyOf(request),
      );
      markReplayed(reply, sent.replayed);
      return reply.status(202).send({ event_id: sent.event_id });
    },
  );
}
