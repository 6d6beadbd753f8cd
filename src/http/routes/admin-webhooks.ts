import type { FastifyRequest } from 'fastify';
import { staffContext } from '../../commands/run-command.js';
import {
  resendEndpointDelivery,
  resumeEndpoint,
  rotateEndpointSecret,
  sendTestEvent,
  updateEndpointSettings,
} from '../../commands/webhooks/endpoints.js';
import { replayEndpointEvents } from '../../commands/webhooks/replay.js';
import { findEndpoint, listAllEndpoints, toPublicEndpoint } from '../../projections/webhook-endpoints.js';
import { listDeliveries } from '../../webhooks/deliveries.js';
import { staffOf } from '../admin-auth.js';
import { notFound } from '../errors.js';
import { adminErrorResponses, AdminWorkspaceParams } from '../schemas/admin.js';
import { answer } from '../schemas/error.js';
import {
  AdminDeliveryParams,
  AdminEndpointParams,
  AdminRotatedSecret,
  AdminWebhookEndpoint,
  AdminWebhookEndpointList,
  DeliveryList,
  DeliveryListQuery,
  ReplayBody,
  ReplaySummary,
  ResendAnswer,
  ResendRequest,
  TestAnswer,
  WebhookEndpointUpdate,
} from '../schemas/webhook.js';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../typed-app.js';

/** Under the admin interface's prefix (/admin/v1, src/http/routes/admin.ts). */
const BASE = '/workspaces/:workspace/webhooks';
const ERRORS = adminErrorResponses(400, 401, 403, 404);
const ROUTE = { tags: ['webhooks'] };

/**
 * The workspace UI's webhook operations, for staff (authenticated by the admin interface's hook, recorded as the
 * actor): endpoints of both modes, their payload version and rate, the delivery log, resend, resume, secret rotation,
 * webhook.test and replay.
 */
export function registerAdminWebhookRoutes(app: TypedApp, services: AppServices): void {
  registerListEndpoints(app, services);
  registerUpdateEndpoint(app, services);
  registerListDeliveries(app, services);
  registerResendDelivery(app, services);
  registerResumeEndpoint(app, services);
  registerRotateSecret(app, services);
  registerSendTest(app, services);
  registerReplay(app, services);
}

/** Finds the endpoint in the staff member's workspace; the command context takes the endpoint's mode. */
async function endpointOf(services: AppServices, request: FastifyRequest, params: { id: string }) {
  const { workspace, actor } = staffOf(request);
  const row = await findEndpoint(services.pool, workspace.id, params.id);
  if (!row) throw notFound('webhook endpoint');
  return { workspace, row, context: staffContext(workspace.id, row.sandbox, actor, services.now()) };
}

/** GET …/webhooks */
function registerListEndpoints(app: TypedApp, services: AppServices): void {
  app.get(
    BASE,
    {
      schema: {
        ...ROUTE,
        operationId: 'listWorkspaceWebhookEndpoints',
        summary: 'Webhook endpoints of the workspace, live and test',
        params: AdminWorkspaceParams,
        response: {
          200: answer(AdminWebhookEndpointList, 'The endpoints of both modes, without their secrets'),
          ...ERRORS,
        },
      },
    },
    async (request) => {
      const { workspace } = staffOf(request);
      const now = services.now();
      return {
        data: (await listAllEndpoints(services.pool, workspace.id)).map((row) => ({
          ...toPublicEndpoint(row, now),
          mode: row.sandbox ? ('test' as const) : ('live' as const),
        })),
      };
    },
  );
}

/** PATCH …/webhooks/{id}: the payload version and the rate, as PATCH /v1/webhooks/{id} changes them, in either mode. */
function registerUpdateEndpoint(app: TypedApp, services: AppServices): void {
  app.patch(
    `${BASE}/:id`,
    {
      schema: {
        ...ROUTE,
        operationId: 'updateWorkspaceWebhookEndpoint',
        summary:
          "Change an endpoint's payload version (deliveries made from now on are rendered in it) or its rate (`rate_limit_per_second`, null for no limit); what the body leaves out stays as it is",
        params: AdminEndpointParams,
        body: WebhookEndpointUpdate,
        response: { 200: answer(AdminWebhookEndpoint, 'The endpoint as it now is'), ...ERRORS },
      },
    },
    async (request) => {
      const { row, context } = await endpointOf(services, request, request.params);
      return {
        ...(await updateEndpointSettings(services, context, row.id, request.body)),
        mode: row.sandbox ? ('test' as const) : ('live' as const),
      };
    },
  );
}

/** GET …/webhooks/{id}/deliveries */
function registerListDeliveries(app: TypedApp, services: AppServices): void {
  app.get(
    `${BASE}/:id/deliveries`,
    {
      schema: {
        ...ROUTE,
        operationId: 'listWebhookDeliveries',
        summary:
          'Delivery log of an endpoint (last 30 days, newest first): request headers and body, responses, timing',
        params: AdminEndpointParams,
        querystring: DeliveryListQuery,
        response: { 200: answer(DeliveryList, 'A page of deliveries, newest first'), ...ERRORS },
      },
    },
    async (request) => {
      const { row } = await endpointOf(services, request, request.params);
      return listDeliveries(services.pool, row.id, {
        limit: request.query.limit ?? 25,
        before: request.query.cursor,
        now: services.now(),
      });
    },
  );
}

/** POST …/webhooks/{id}/deliveries/{deliveryId}/resend */
function registerResendDelivery(app: TypedApp, services: AppServices): void {
  app.post(
    `${BASE}/:id/deliveries/:deliveryId/resend`,
    {
      schema: {
        ...ROUTE,
        operationId: 'resendWebhookDelivery',
        summary:
          'Send a delivery again: same event id and body (in its payload version, unless `payload_version` asks for another), new delivery id',
        params: AdminDeliveryParams,
        body: ResendRequest,
        response: { 201: answer(ResendAnswer, 'The new delivery, carrying the same event'), ...ERRORS },
      },
    },
    async (request, reply) => {
      const { row } = await endpointOf(services, request, request.params);
      const resent = await resendEndpointDelivery(
        services,
        row,
        request.params.deliveryId,
        request.body?.payload_version,
      );
      if (!resent) throw notFound('delivery');
      return reply.status(201).send(resent);
    },
  );
}

/** POST …/webhooks/{id}/resume */
function registerResumeEndpoint(app: TypedApp, services: AppServices): void {
  app.post(
    `${BASE}/:id/resume`,
    {
      schema: {
        ...ROUTE,
        operationId: 'resumeWebhookEndpoint',
        summary: 'Resume a paused endpoint; what waited for it is sent',
        params: AdminEndpointParams,
        response: { 200: answer(AdminWebhookEndpoint, 'The endpoint, active again'), ...ERRORS },
      },
    },
    async (request) => {
      const { row, context } = await endpointOf(services, request, request.params);
      return {
        ...(await resumeEndpoint(services, context, row.id)),
        mode: row.sandbox ? ('test' as const) : ('live' as const),
      };
    },
  );
}

/** POST …/webhooks/{id}/rotate-secret */
function registerRotateSecret(app: TypedApp, services: AppServices): void {
  app.post(
    `${BASE}/:id/rotate-secret`,
    {
      schema: {
        ...ROUTE,
        operationId: 'rotateWebhookSecret',
        summary: 'Rotate the secret; the old one keeps signing beside it for 24 hours',
        params: AdminEndpointParams,
        response: {
          200: answer(AdminRotatedSecret, 'The new secret, shown in this answer only, and the endpoint'),
          ...ERRORS,
        },
      },
    },
    async (request) => {
      const { row, context } = await endpointOf(services, request, request.params);
      return rotateEndpointSecret(services, context, row.id);
    },
  );
}

/** POST …/webhooks/{id}/test */
function registerSendTest(app: TypedApp, services: AppServices): void {
  app.post(
    `${BASE}/:id/test`,
    {
      schema: {
        ...ROUTE,
        operationId: 'sendWebhookTest',
        summary: 'Send a webhook.test event to this endpoint',
        params: AdminEndpointParams,
        response: { 202: answer(TestAnswer, 'The webhook.test event is on its way to this endpoint'), ...ERRORS },
      },
    },
    async (request, reply) => {
      const { row, context } = await endpointOf(services, request, request.params);
      return reply.status(202).send(await sendTestEvent(services, context, row.id));
    },
  );
}

/** POST …/webhooks/{id}/replay: the API's replay (POST /v1/webhooks/{id}/replay), for staff, on either mode's endpoint. */
function registerReplay(app: TypedApp, services: AppServices): void {
  app.post(
    `${BASE}/:id/replay`,
    {
      schema: {
        ...ROUTE,
        operationId: 'replayWorkspaceWebhookEvents',
        summary:
          'Send the events of a time window (at most 30 days back) to this endpoint again, as POST /v1/webhooks/{id}/replay does',
        params: AdminEndpointParams,
        body: ReplayBody,
        response: {
          202: answer(ReplaySummary, 'The deliveries are queued, in event order'),
          ...adminErrorResponses(400, 401, 403, 404, 429),
        },
      },
    },
    async (request, reply) => {
      const { row, context } = await endpointOf(services, request, request.params);
      const { replayed: _replayed, ...summary } = await replayEndpointEvents(
        services,
        context,
        row.id,
        request.body,
        null,
      );
      return reply.status(202).send(summary);
    },
  );
}
