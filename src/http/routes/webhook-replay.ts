import { contextFromRequest } from '../../commands/run-command.js';
import { replayEndpointEvents } from '../../commands/webhooks/replay.js';
import { IdempotencyHeaders } from '../../schemas/lead.js';
import { idempotencyKeyOf, markReplayed } from '../idempotency-header.js';
import { answer, errorResponses } from '../schemas/error.js';
import { ReplayBody, ReplaySummary, WebhookIdParams } from '../schemas/webhook.js';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../typed-app.js';

/**
 * POST /v1/webhooks/{id}/replay: the events of a window sent again to the endpoint (same event ids, new delivery ids,
 * in event order, paced), the operation the console's "retry failed since", the admin interface and the CLI run too.
 */
export function registerWebhookReplayRoute(app: TypedApp, services: AppServices): void {
  app.post(
    '/v1/webhooks/:id/replay',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'replayWebhookEvents',
        summary: 'Send the events of a time window (at most 30 days back) to this endpoint again',
        description:
          'Queues a delivery of each event of the workspace and mode created in [`since`, `until`) that this ' +
          'endpoint was sent (of the kinds it subscribes to, or those named in `kinds`; with `only_failed`, only ' +
          'those whose deliveries failed), in event order: the same event id, body, payload version and sequence ' +
          'number as the first delivery, a new delivery id, due 50 a second. At most 10,000 deliveries per replay ' +
          '(400 `replay_too_large` above) and 10 replays an hour per endpoint (429 `rate_limited`, scope ' +
          '`webhook_replay`). A paused endpoint keeps them waiting until it is resumed. With an `Idempotency-Key`, ' +
          'a repeat within 24 hours with the same body answers the first summary and queues nothing.',
        params: WebhookIdParams,
        headers: IdempotencyHeaders,
        body: ReplayBody,
        response: {
          202: answer(
            ReplaySummary,
            'The deliveries are queued; they show in the delivery log. A repeat with the same Idempotency-Key ' +
              'answers the first summary with `Idempotent-Replayed: true` and queues nothing.',
          ),
          ...errorResponses(400, 401, 402, 403, 404, 409, 429),
        },
      },
      config: { auth: { keys: 'secret', scope: 'webhooks:manage', feature: 'webhooks' } },
    },
    async (request, reply) => {
      const { replayed, ...summary } = await replayEndpointEvents(
        services,
        contextFromRequest(request, services.now()),
        request.params.id,
        request.body,
        idempotencyKeyOf(request),
      );
      markReplayed(reply, replayed);
      return reply.status(202).send(summary);
    },
  );
}
