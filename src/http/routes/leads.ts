import type { FastifyReply, FastifyRequest } from 'fastify';
import { captureLead, earlierAnswer, type CaptureAnswer } from '../../commands/leads/capture-lead.js';
import { updateLead } from '../../commands/leads/update-lead.js';
import { contextFromRequest } from '../../commands/run-command.js';
import type { LeadPatch } from '../../domain/leads/decide.js';
import { CaptchaUnavailableError, verifyCaptcha, type CaptchaVerdict } from '../../leads/captcha.js';
import { decodeCursor, encodeCursor } from '../../leads/cursor.js';
import { requestHash } from '../../leads/idempotency.js';
import { spamReason } from '../../leads/spam.js';
import { normaliseSubmission, type LeadCreateBody, type LeadSubmission } from '../../leads/submission.js';
import { findLead, listLeads } from '../../projections/leads-queries.js';
import { ApiError, fieldsFromValidation, notFound, validationFailed } from '../errors.js';
import type { AuthContext } from '../auth.js';
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

/** Every problem of a LeadCreate body, schema and business rules together, with consent kept apart. */
function createProblems(
  request: FastifyRequest,
  auth: AuthContext,
  now: Date,
): { problems: Record<string, string>; body: LeadCreateBody | null; submission: LeadSubmission | null } {
  const problems: Record<string, string> = {};
  const error = request.validationError as (Error & { validation?: AjvErrors; validationContext?: string }) | undefined;
  if (error) {
    // Only the body is validated in the handler; a bad header or path goes to the common error handler.
    if (error.validationContext !== 'body' || !error.validation) throw error;
    Object.assign(problems, fieldsFromValidation(error.validation, 'body'));
  }
  delete problems.consent;
  const raw = request.body;
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    return {
      problems: Object.keys(problems).length ? problems : { body: 'must be a JSON object' },
      body: null,
      submission: null,
    };
  const body = raw as LeadCreateBody;
  const refused = new Set(Object.keys(problems).map((field) => field.split('.')[0]!));
  // Normalised once: with no problem at all, this is the submission the capture uses.
  const submission = normaliseSubmission(body, auth.workspace.settings, now, problems, refused);
  if (
    auth.key.kind === 'public' &&
    !refused.has('captcha_token') &&
    (typeof body.captcha_token !== 'string' || body.captcha_token.trim() === '')
  ) {
    problems.captcha_token = 'is required with a public key';
  }
  return { problems, body, submission };
}

type WidgetCaptcha = AuthContext['workspace']['settings']['widget']['captcha'];

/** The captcha settings a submission with this key is verified against (public keys of a workspace with a provider), else null. */
function captchaToCheck(
  auth: AuthContext,
): (WidgetCaptcha & { provider: Exclude<WidgetCaptcha['provider'], 'none'> }) | null {
  const captcha = auth.workspace.settings.widget.captcha;
  return auth.key.kind === 'public' && captcha.provider !== 'none' ? { ...captcha, provider: captcha.provider } : null;
}

async function captchaVerdict(
  services: AppServices,
  request: FastifyRequest,
  auth: AuthContext,
  token: string,
): Promise<CaptchaVerdict | null> {
  const captcha = captchaToCheck(auth);
  if (!captcha) return null;
  if (!captcha.sealed_secret)
    throw new ApiError(
      503,
      'captcha_unavailable',
      'This workspace has no captcha secret configured; the form cannot be checked',
    );
  try {
    return await verifyCaptcha({
      provider: captcha.provider,
      verifyUrl: services.config.captchaVerifyUrls[captcha.provider],
      secret: services.secretBox.captchaSecrets.open(captcha.sealed_secret),
      token,
      siteKey: captcha.site_key,
      remoteIp: request.ip,
      expectedHostname: auth.origin ? new URL(auth.origin).hostname : null,
    });
  } catch (error) {
    if (error instanceof CaptchaUnavailableError) {
      request.log.warn({ err: error }, 'captcha provider unavailable');
      throw new ApiError(
        503,
        'captcha_unavailable',
        'The captcha provider could not be reached; try again shortly',
        {},
        { 'retry-after': '5' },
      );
    }
    throw error;
  }
}

function send(reply: FastifyReply, answer: CaptureAnswer) {
  if (answer.replayed) reply.header('idempotent-replayed', 'true');
  return reply.status(answer.status).send(answer.body);
}

export function registerLeadRoutes(app: TypedApp, services: AppServices): void {
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
      const now = services.now();
      const { problems, body, submission } = createProblems(request, auth, now);
      const consentGiven = body?.consent === true;
      if (Object.keys(problems).length > 0 || !body || !submission) {
        if (!consentGiven) problems.consent = 'must be true';
        throw validationFailed(problems);
      }
      if (!consentGiven)
        throw new ApiError(
          400,
          'consent_required',
          'The enquirer must consent (consent: true) before a lead can be created',
        );
      if (spamReason(body))
        throw new ApiError(400, 'spam_detected', 'This submission looks like spam and was not accepted');

      const sandbox = auth.sandbox;
      const header = request.headers['idempotency-key'];
      const idempotency = typeof header === 'string' ? { key: header, requestHash: requestHash(body) } : null;
      // A repeat must not need its (single-use) captcha token verified again, so when a captcha will be checked the
      // first answer is looked up before it; otherwise the capture's own read, under the key's lock, finds it.
      if (idempotency && captchaToCheck(auth)) {
        const earlier = await earlierAnswer(
          services,
          auth.workspace.id,
          sandbox,
          idempotency.key,
          idempotency.requestHash,
          now,
        );
        if (earlier) return send(reply, earlier);
      }
      const captcha = await captchaVerdict(services, request, auth, body.captcha_token ?? '');
      const answer = await captureLead(services, {
        workspace: auth.workspace,
        key: auth.key,
        submission,
        idempotency,
        captcha,
        context: (at) => contextFromRequest(request, at),
        now: services.now,
      });
      return send(reply, answer);
    },
  );

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
      const page = await listLeads(services.pool, auth.workspace.id, auth.sandbox, {
        updatedSince: updated_since ? new Date(updated_since) : undefined,
        after,
        limit,
        now: services.now(),
      });
      const next = page.next ? encodeCursor(services.secretBox, auth.workspace.id, auth.sandbox, page.next) : null;
      // Rows are stored as the exact Lead JSON and joined by the database; this skips a parse and a re-serialisation
      // of every lead. fastify sends a string with a JSON content type as it is; the cast tells the type provider so.
      const json = `{"data":[${page.json}],"next_cursor":${JSON.stringify(next)}}`;
      return reply.type('application/json; charset=utf-8').send(json as never);
    },
  );

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
    async (request) => {
      const auth = request.auth!;
      const lead = await findLead(services.pool, auth.workspace.id, auth.sandbox, request.params.id);
      if (!lead) throw notFound('lead');
      return lead;
    },
  );

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
    async (request) => {
      const auth = request.auth!;
      return updateLead(
        services,
        auth.workspace,
        auth.sandbox,
        request.params.id,
        request.body as LeadPatch,
        (at) => contextFromRequest(request, at),
        services.now,
      );
    },
  );
}
