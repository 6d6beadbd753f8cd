import { Type } from 'typebox';
import { contextFromRequest } from '../../commands/run-command.js';
import { createEndpoint, deleteEndpoint, updateEndpointSettings } from '../../commands/webhooks/endpoints.js';
import { listEndpoints, toPublicEndpoint } from '../../projections/webhook-endpoints.js';
import { answer, errorResponses } from '../schemas/error.js';
import {
  WebhookEndpointCreate,
  WebhookEndpoint,
  WebhookEndpointCreated,
  WebhookEndpointList,
  WebhookEndpointUpdate,
  WebhookIdParams,
} from '../schemas/webhook.js';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../typed-app.js';
import { registerWebhookTestRoute } from './webhook-test.js';
import { registerWebhookReplayRoute } from './webhook-replay.js';

const AUTH = { keys: 'secret', scope: 'webhooks:manage', feature: 'webhooks' } as const;

/** GET, POST, PATCH and DELETE /v1/webhooks, POST /v1/webhooks/{id}/test and POST /v1/webhooks/{id}/replay. A test-mode key manages test endpoints (sandbox events only), a live key live ones. */
export function registerWebhookRoutes(app: TypedApp, services: AppServices): void {
  registerListEndpoints(app, services);
  registerCreateEndpoint(app, services);
  registerUpdateEndpoint(app, services);
  registerDeleteEndpoint(app, services);
  registerWebhookTestRoute(app, services);
  registerWebhookReplayRoute(app, services);
}

/**
 * PATCH /v1/webhooks/{id}: the owner moves the endpoint to another payload version (upgrade, or back), or sets or
 * removes its rate; what the body leaves out stays as it is.
 */
function registerUpdateEndpoint(app: TypedApp, services: AppServices): void {
  app.patch(
    '/v1/webhooks/:id',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'updateWebhookEndpoint',
        summary:
          "Change a webhook endpoint's payload version (deliveries made from now on are rendered in it; those already made, their retries and resends keep theirs) or its rate (`rate_limit_per_second`, null for no limit)",
        params: WebhookIdParams,
        body: WebhookEndpointUpdate,
        response: {
          200: answer(WebhookEndpoint, 'The endpoint as it now is'),
          ...errorResponses(400, 401, 402, 403, 404, 429),
        },
      },
      config: { auth: AUTH },
    },
    async (request) =>
      // The command finds the endpoint in the key's mode only: a test key cannot change a live endpoint.
      updateEndpointSettings(services, contextFromRequest(request, services.now()), request.params.id, request.body),
  );
}

/** GET /v1/webhooks */
function registerListEndpoints(app: TypedApp, services: AppServices): void {
  app.get(
    '/v1/webhooks',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'listWebhookEndpoints',
        summary: 'List webhook endpoints (never their secrets)',
        response: {
          200: answer(WebhookEndpointList, "The endpoints of the key's mode, without their secrets"),
          ...errorResponses(401, 402, 403, 429),
        },
      },
      config: { auth: AUTH },
    },
    async (request) => {
      const auth = request.auth!;
      const now = services.now();
      const rows = await listEndpoints(services.pool, auth.workspace.id, auth.sandbox);
      return { data: rows.map((row) => toPublicEndpoint(row, now)) };
    },
  );
}

/** POST /v1/webhooks */
function registerCreateEndpoint(app: TypedApp, services: AppServices): void {
  app.post(
    '/v1/webhooks',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'createWebhookEndpoint',
        summary: 'Create a webhook endpoint; its secret is in this answer only',
        body: WebhookEndpointCreate,
        response: {
          201: answer(WebhookEndpointCreated, 'The endpoint was created; its `secret` is in this answer only'),
          ...errorResponses(400, 401, 402, 403, 409, 429),
        },
      },
      config: { auth: AUTH },
    },
    async (request, reply) => {
      const auth = request.auth!;
      const { endpoint, secret, test_event_id } = await createEndpoint(
        services,
        contextFromRequest(request, services.now()),
        auth.workspace,
        request.body,
      );
      return reply.status(201).send({ ...endpoint, secret, ...(test_event_id ? { test_event_id } : {}) });
    },
  );
}

/** DELETE /v1/webhooks/{id} */
function registerDeleteEndpoint(app: TypedApp, services: AppServices): void {
  app.delete(
    '/v1/webhooks/:id',
    {
      schema: {
        tags: ['webhooks'],
        operationId: 'deleteWebhookEndpoint',
        summary: 'Delete a webhook endpoint',
        params: WebhookIdParams,
        response: { 204: Type.Null({ description: 'deleted, no body' }), ...errorResponses(401, 402, 403, 404, 429) },
      },
      config: { auth: AUTH },
    },
    async (request, reply) => {
      await deleteEndpoint(services, contextFromRequest(request, services.now()), request.params.id);
      return reply.status(204).send(null);
    },
  );
}
