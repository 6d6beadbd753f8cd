import type { FastifyRequest } from 'fastify';
import type { AppServices } from '../../bootstrap.js';
import type { Static } from 'typebox';
import {
  readApplicationAsOf,
  readHistoryPage,
  readLeadAsOf,
  type HistorySubject,
} from '../../commands/history/history.js';
import {
  ApplicationAsOf,
  ApplicationHistoryParams,
  AsOfQuery,
  HistoryPage,
  HistoryQuery,
  LeadAsOf,
  LeadHistoryParams,
} from '../../schemas/history.js';
import { staffOf } from '../admin-auth.js';
import { adminErrorResponses } from '../schemas/admin.js';
import { answer } from '../schemas/error.js';
import type { TypedApp } from '../typed-app.js';

/** Under the admin interface's prefix (/admin/v1, src/http/routes/admin.ts). */
const BASE = '/workspaces/:workspace';
const ERRORS = adminErrorResponses(400, 401, 403, 404);
const TAGS = ['history'];

/**
 * What auditors read: a lead's or an application's history, paged, and its state at any past instant, replayed from
 * its stream with the evolve functions the service runs (src/commands/history/history.ts).
 */
export function registerAdminHistoryRoutes(app: TypedApp, services: AppServices): void {
  registerLeadHistory(app, services);
  registerApplicationHistory(app, services);
  registerLeadAsOf(app, services);
  registerApplicationAsOf(app, services);
}

function scope(request: FastifyRequest, sandbox: boolean | undefined) {
  return { tenantId: staffOf(request).workspace.id, sandbox: sandbox ?? false };
}

function history(
  services: AppServices,
  subject: HistorySubject,
  request: FastifyRequest,
  id: string,
  query: Static<typeof HistoryQuery>,
) {
  return readHistoryPage(services, scope(request, query.sandbox), subject, id, {
    limit: query.limit ?? 50,
    startingAfter: query.starting_after,
  });
}

/** GET …/leads/{leadId}/history */
function registerLeadHistory(app: TypedApp, services: AppServices): void {
  app.get(
    `${BASE}/leads/:leadId/history`,
    {
      schema: {
        tags: TAGS,
        operationId: 'getLeadHistory',
        summary: 'The history of a lead, oldest first: event id, type, time, actor and facts (paged)',
        params: LeadHistoryParams,
        querystring: HistoryQuery,
        response: { 200: answer(HistoryPage, 'One page of the history'), ...ERRORS },
      },
    },
    (request) => history(services, 'lead', request, request.params.leadId, request.query),
  );
}

/** GET …/applications/{id}/history */
function registerApplicationHistory(app: TypedApp, services: AppServices): void {
  app.get(
    `${BASE}/applications/:id/history`,
    {
      schema: {
        tags: TAGS,
        operationId: 'getApplicationHistory',
        summary: 'The history of an application, oldest first: event id, type, time, actor and facts (paged)',
        params: ApplicationHistoryParams,
        querystring: HistoryQuery,
        response: { 200: answer(HistoryPage, 'One page of the history'), ...ERRORS },
      },
    },
    (request) => history(services, 'application', request, request.params.id, request.query),
  );
}

/** GET …/leads/{leadId}/state */
function registerLeadAsOf(app: TypedApp, services: AppServices): void {
  app.get(
    `${BASE}/leads/:leadId/state`,
    {
      schema: {
        tags: TAGS,
        operationId: 'getLeadAsOf',
        summary: 'A lead as it was at an instant, replayed from its events',
        params: LeadHistoryParams,
        querystring: AsOfQuery,
        response: { 200: answer(LeadAsOf, 'The lead at that instant'), ...ERRORS },
      },
    },
    async (request) => {
      const asOf = new Date(request.query.as_of);
      const found = await readLeadAsOf(services, scope(request, request.query.sandbox), request.params.leadId, asOf);
      return { as_of: asOf.toISOString(), ...found };
    },
  );
}

/** GET …/applications/{id}/state */
function registerApplicationAsOf(app: TypedApp, services: AppServices): void {
  app.get(
    `${BASE}/applications/:id/state`,
    {
      schema: {
        tags: TAGS,
        operationId: 'getApplicationAsOf',
        summary: 'An application as it was at an instant, replayed from its events',
        params: ApplicationHistoryParams,
        querystring: AsOfQuery,
        response: { 200: answer(ApplicationAsOf, 'The application at that instant'), ...ERRORS },
      },
    },
    async (request) => {
      const asOf = new Date(request.query.as_of);
      const found = await readApplicationAsOf(services, scope(request, request.query.sandbox), request.params.id, asOf);
      return { as_of: asOf.toISOString(), ...found };
    },
  );
}
