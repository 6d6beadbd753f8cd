import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CaptureAnswer } from '../../commands/leads/capture-lead.js';
import { submitLead } from '../../commands/leads/submit-lead.js';
import { updateLead } from '../../commands/leads/update-lead.js';
import { contextFromRequest } from '../../commands/run-command.js';
import { decodeCursor, encodeCursor } from '../../intake/cursor.js';
import { leadOutcome, type Metrics } from '../../observability/metrics.js';
import { findLeadJson, listLeads } from '../../projections/leads-queries.js';
import { leadJson } from '../../schemas/lead-json.js';
import { fieldsFromValidation, notFound, validationFailed } from '../errors.js';
import { idempotencyKeyOf, markReplayed } from '../idempotency-header.js';
import { answer, errorResponses } from '../schemas/error.js';
import {
  IdempotencyHeaders,
  LeadCreate,
  LeadCreated,
  LeadDuplicate,
  LeadIdParams,
  LeadList,
  LeadListQuery,
  LeadPatchBody,
  LeadSchema,
} from '../../schemas/lead.js';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../typed-app.js';

const DEFAULT_PAGE = 25;

type AjvErrors = Parameters<typeof fieldsFromValidation>[0];

/** What the schema found wrong with the body, by field. Only the body is validated in the handler. */
function bodyProblems(request: FastifyRequest): Record<string, string> {
  const error = request.validationError as (Error & { validation?: AjvErrors; validationContext?: string }) | undefined;
  if (!error) return {};
  // A bad header or path goes to the common error handler.
  if (error.validationContext !== 'body' || !error.validation) throw error;
  return fieldsFromValidation(error.validation, 'body');
}

const OUTCOME_LABELS = {
  created: { outcome: 'created' },
  duplicate: { outcome: 'duplicate' },
  replayed: { outcome: 'replayed' },
} as const;

function send(reply: FastifyReply, answer: CaptureAnswer, metrics: Metrics) {
  metrics.leads.inc(OUTCOME_LABELS[leadOutcome(answer)]);
  markReplayed(reply, answer.replayed);
  return reply.status(answer.status).send(answer.body);
}

export function registerLeadRoutes(app: TypedApp, services: AppServices): void {
  registerCreateLead(app, services);
  registerListLeads(app, services);
  registerGetLead(app, services);
  registerUpdateLead(app, services);
}

/** POST /v1/leads: parses, calls submitLead, answers 201 (new lead) or 200 (duplicate), replays marked. */
function registerCreateLead(app: TypedApp, services: AppServices): void {
  app.post(
    '/v1/leads',
    {
      schema: {
        tags: ['leads'],
        operationId: 'createLead',
        summary: 'Create a lead (or add an enquiry to the lead the person already has)',
        headers: IdempotencyHeaders,
        body: LeadCreate,
        response: {
          201: answer(LeadCreated, 'A new lead was created'),
          200: answer(
            LeadDuplicate,
            'The person already has a lead (same phone or email): the submission was added to it as an enquiry',
          ),
          ...errorResponses(400, 401, 402, 403, 409, 429, 503),
        },
      },
      attachValidation: true,
      config: { auth: { keys: 'any', scope: 'leads:create' } },
    },
    async (request, reply) => {
      const auth = request.auth!;
      const answer = await submitLead(services, {
        workspace: auth.workspace,
        key: auth.key,
        origin: auth.origin,
        // Only a captcha check reads it, and request.ip is worked out from the forwarding headers at each read.
        get remoteIp() {
          return request.ip;
        },
        body: request.body,
        schemaProblems: bodyProblems(request),
        idempotencyKey: idempotencyKeyOf(request),
        context: (at) => contextFromRequest(request, at),
        log: request.log,
      });
      return send(reply, answer, services.metrics);
    },
  );
}

/** GET /v1/leads: a page of leads for sync, behind a sealed cursor. */
function registerListLeads(app: TypedApp, services: AppServices): void {
  app.get(
    '/v1/leads',
    {
      schema: {
        tags: ['leads'],
        operationId: 'listLeads',
        summary: 'List leads ascending by (updated_at, id), for sync',
        querystring: LeadListQuery,
        response: {
          200: answer(
            LeadList,
            'A page of leads, ascending by (updated_at, id); `next_cursor` is null on the last page',
          ),
          ...errorResponses(400, 401, 402, 403, 429),
        },
      },
      config: { auth: { keys: 'secret', scope: 'leads:read' } },
    },
    async (request, reply) => {
      const auth = request.auth!;
      const { updated_since, cursor, limit = DEFAULT_PAGE } = request.query;
      const after =
        cursor === undefined ? undefined : decodeCursor(services.secretBox, auth.workspace.id, auth.sandbox, cursor);
      if (cursor !== undefined && !after)
        throw validationFailed({ cursor: 'is not a cursor this service gave for this workspace and mode' });
      const page = await listLeads(
        services.pool,
        auth.workspace.id,
        auth.sandbox,
        { filters: { updated_since }, after, limit, now: services.now() },
        { namedStatements: services.namedStatements },
      );
      const next = page.next ? encodeCursor(services.secretBox, auth.workspace.id, auth.sandbox, page.next) : null;
      // Rows are stored as the exact Lead JSON and joined by the database; this skips a parse and a re-serialisation
      // of every lead. fastify sends a string with a JSON content type as it is; the cast tells the type provider so.
      const json = `{"data":[${page.json}],"next_cursor":${JSON.stringify(next)}}`;
      return reply.type('application/json; charset=utf-8').send(json as never);
    },
  );
}

/** GET /v1/leads/{id} */
function registerGetLead(app: TypedApp, services: AppServices): void {
  app.get(
    '/v1/leads/:id',
    {
      schema: {
        tags: ['leads'],
        operationId: 'getLead',
        summary: 'Read a lead',
        params: LeadIdParams,
        response: { 200: answer(LeadSchema, 'The lead'), ...errorResponses(401, 402, 403, 404, 429) },
      },
      config: { auth: { keys: 'secret', scope: 'leads:read' } },
    },
    async (request, reply) => {
      const auth = request.auth!;
      const json = await findLeadJson(services.pool, auth.workspace.id, auth.sandbox, request.params.id);
      if (json === undefined) throw notFound('lead');
      // The stored text is leadJson's, the one serialiser of a Lead: sent as it is (see the list).
      return reply.type('application/json; charset=utf-8').send(json as never);
    },
  );
}

/** PATCH /v1/leads/{id}: calls updateLead and answers the lead as it is after. */
function registerUpdateLead(app: TypedApp, services: AppServices): void {
  app.patch(
    '/v1/leads/:id',
    {
      schema: {
        tags: ['leads'],
        operationId: 'updateLead',
        summary: 'Update a lead: stage, lost reason, temperature, follow-up, owner, custom fields, or add a note',
        params: LeadIdParams,
        body: LeadPatchBody,
        response: {
          200: answer(LeadSchema, 'The lead as it is after the update'),
          ...errorResponses(400, 401, 402, 403, 404, 409, 429),
        },
      },
      config: { auth: { keys: 'secret', scope: 'leads:update' } },
    },
    async (request, reply) => {
      const auth = request.auth!;
      const lead = await updateLead(services, {
        workspace: auth.workspace,
        sandbox: auth.sandbox,
        leadId: request.params.id,
        patch: request.body,
        context: (at) => contextFromRequest(request, at),
      });
      // The text the read model stored for this change: leadJson, the one serialiser of a Lead.
      return reply.type('application/json; charset=utf-8').send(leadJson(lead) as never);
    },
  );
}
