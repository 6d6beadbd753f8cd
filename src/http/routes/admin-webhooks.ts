import type { FastifyRequest } from 'fastify';
import { staffContext } from '../../commands/run-command.js';
import { resumeEndpoint, rotateEndpointSecret, sendTestEvent } from '../../commands/webhooks/endpoints.js';
import { findEndpoint, listAllEndpoints, toPublicEndpoint } from '../../projections/webhook-endpoints.js';
import { listDeliveries, resendDelivery } from '../../webhooks/deliveries.js';
import { authenticateAdmin } from '../admin-auth.js';
import { notFound } from '../errors.js';
import { errorResponses } from '../schemas/error.js';
import {
  AdminDeliveryParams,
  AdminEndpointParams,
  AdminRotatedSecret,
  AdminWebhookEndpoint,
  AdminWebhookEndpointList,
  AdminWorkspaceParams,
  DeliveryList,
  DeliveryListQuery,
  ResendAnswer,
  TestAnswer,
} from '../schemas/webhook.js';
import type { AppServices, TypedApp } from '../services.js';

const BASE = '/admin/v1/workspaces/:workspace/webhooks';
const ERRORS = errorResponses(400, 401, 403, 404);

/**
 * The workspace UI's webhook operations, for staff (ADMIN_TOKEN plus X-Admin-User, recorded as the actor): endpoints
 * of both modes, the delivery log, resend, resume, secret rotation and webhook.test.
 */
export function registerAdminWebhookRoutes(app: TypedApp, services: AppServices): void {
  /** Authenticates the staff member and finds the endpoint in the workspace; the command context takes the endpoint's mode. */
  async function endpointOf(request: FastifyRequest, params: { workspace: string; id: string }) {
    const { workspace, actor } = await authenticateAdmin(request, services.config.adminToken, services.pool, params.workspace);
    const row = await findEndpoint(services.pool, workspace.id, params.id);
    if (!row) throw notFound('webhook endpoint');
    return { workspace, row, context: staffContext(workspace.id, row.sandbox, actor, services.now()) };
  }

  app.get(
    BASE,
    { schema: { tags: ['admin'], summary: 'Webhook endpoints of the workspace, live and test', params: AdminWorkspaceParams, response: { 200: AdminWebhookEndpointList, ...ERRORS } } },
    async (request) => {
      const { workspace } = await authenticateAdmin(request, services.config.adminToken, services.pool, request.params.workspace);
      const now = services.now();
      return { data: (await listAllEndpoints(services.pool, workspace.id)).map((row) => ({ ...toPublicEndpoint(row, now), mode: row.sandbox ? ('test' as const) : ('live' as const) })) };
    },
  );

  app.get(
    `${BASE}/:id/deliveries`,
    {
      schema: {
        tags: ['admin'],
        summary: 'Delivery log of an endpoint (last 30 days, newest first): request headers and body, responses, timing',
        params: AdminEndpointParams,
        querystring: DeliveryListQuery,
        response: { 200: DeliveryList, ...ERRORS },
      },
    },
    async (request) => {
      const { row } = await endpointOf(request, request.params);
      return listDeliveries(services.pool, row.id, { limit: request.query.limit ?? 25, before: request.query.cursor, now: services.now() });
    },
  );

  app.post(
    `${BASE}/:id/deliveries/:deliveryId/resend`,
    { schema: { tags: ['admin'], summary: 'Send a delivery again: same event id and body, new delivery id', params: AdminDeliveryParams, response: { 201: ResendAnswer, ...ERRORS } } },
    async (request, reply) => {
      const { row } = await endpointOf(request, request.params);
      const resent = await resendDelivery(services.pool, row.id, request.params.deliveryId, services.now());
      if (!resent) throw notFound('delivery');
      return reply.status(201).send(resent);
    },
  );

  app.post(
    `${BASE}/:id/resume`,
    { schema: { tags: ['admin'], summary: 'Resume a paused endpoint; what waited for it is sent', params: AdminEndpointParams, response: { 200: AdminWebhookEndpoint, ...ERRORS } } },
    async (request) => {
      const { row, context } = await endpointOf(request, request.params);
      return { ...(await resumeEndpoint(services, context, row.id)), mode: row.sandbox ? ('test' as const) : ('live' as const) };
    },
  );

  app.post(
    `${BASE}/:id/rotate-secret`,
    {
      schema: { tags: ['admin'], summary: 'Rotate the secret; the old one keeps signing beside it for 24 hours', params: AdminEndpointParams, response: { 200: AdminRotatedSecret, ...ERRORS } },
    },
    async (request) => {
      const { row, context } = await endpointOf(request, request.params);
      return rotateEndpointSecret(services, context, row.id);
    },
  );

  app.post(
    `${BASE}/:id/test`,
    { schema: { tags: ['admin'], summary: 'Send a webhook.test event to this endpoint', params: AdminEndpointParams, response: { 202: TestAnswer, ...ERRORS } } },
    async (request, reply) => {
      const { row, context } = await endpointOf(request, request.params);
      return reply.status(202).send(await sendTestEvent(services, context, row.id));
    },
  );
}
