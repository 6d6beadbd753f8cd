import { randomFillSync } from 'node:crypto';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { databaseOutage, databaseUnreachable } from '../storage/outage.js';
import { poolTimedOut } from '../storage/postgres.js';
import { isCommandError, type CommandError } from '../commands/errors.js';
import type { RefusalKind } from '../domain/refusal.js';
import { DATE_TIME_RULE, printable, textProblem } from './edge-values.js';
import { DATE_TIME_PATTERN, NO_NUL_PATTERN } from './stated-rules.js';

const REQUEST_ID_BYTES = 12;
// Random bytes are drawn for many ids at once: one call into the CSPRNG per 341 ids instead of one per request.
const idBytes = Buffer.alloc(REQUEST_ID_BYTES * 341);
let idOffset = idBytes.length;

/** A request id: `req_` and 24 hexadecimal digits. Every answer carries one, in its body and its `Request-Id` header. */
export function newRequestId(): string {
  if (idOffset === idBytes.length) {
    randomFillSync(idBytes);
    idOffset = 0;
  }
  const id = `req_${idBytes.toString('hex', idOffset, idOffset + REQUEST_ID_BYTES)}`;
  idOffset += REQUEST_ID_BYTES;
  return id;
}

export interface ErrorExtras {
  fields?: Record<string, string>;
  scope?: string;
  retry_after?: number;
  required?: string;
}

/** An answer other than 2xx, in the spec's Error shape. Throw it from anywhere in a request. */
export class ApiError extends Error {
  readonly statusCode: number;
  readonly code: string;
  readonly extras: ErrorExtras;
  readonly headers: Record<string, string>;
  constructor(
    statusCode: number,
    code: string,
    message: string,
    extras: ErrorExtras = {},
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.statusCode = statusCode;
    this.code = code;
    this.extras = extras;
    this.headers = headers;
    this.name = 'ApiError';
  }
}

/** Seconds an overloaded service asks clients to wait before trying again. */
const OVERLOAD_RETRY_AFTER_SECONDS = 1;

/** Load shedding's answer (src/http/observability.ts, and a database pool acquisition that timed out). */
export const overloaded = () =>
  new ApiError(
    503,
    'overloaded',
    'The service is overloaded; retry after the Retry-After interval',
    {},
    { 'retry-after': String(OVERLOAD_RETRY_AFTER_SECONDS) },
  );

/** Seconds clients are asked to wait while the database cannot be reached: a restart takes a few. */
const DATABASE_RETRY_AFTER_SECONDS = 2;

/** The answer while the database cannot be reached (down, restarting, unreachable): a fault to retry, not a 500. */
export const serviceUnavailable = () =>
  new ApiError(
    503,
    'service_unavailable',
    'The service cannot reach its database for a moment; retry after the Retry-After interval',
    {},
    { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) },
  );

export const notFound = (what: string) => new ApiError(404, 'not_found', `No such ${what}`);

export function validationFailed(
  fields: Record<string, string>,
  message = 'Some fields are invalid; see fields',
): ApiError {
  return new ApiError(400, 'validation_failed', message, { fields });
}

const RULE_STATUS: Record<RefusalKind, number> = {
  invalid: 400,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  unsupported: 415,
  unprocessable: 422,
};

/**
 * The one translation of command and domain refusals to HTTP: each refusal's status, code, message and details in the
 * spec's Error shape. The CLI says the same refusals in its own words (src/cli/errors.ts).
 */
export function commandErrorAnswer(error: CommandError): ApiError {
  switch (error.refusal) {
    case 'rule':
      return new ApiError(
        RULE_STATUS[error.kind],
        error.code,
        error.message,
        error.fields ? { fields: error.fields } : {},
      );
    case 'not_found':
      return notFound(error.what);
    case 'quota_exceeded':
      return new ApiError(
        429,
        'quota_exceeded',
        `This workspace has used its monthly quota of ${error.limit} new leads; it renews on the first day of next month (UTC)`,
      );
    case 'captcha_failed':
      return new ApiError(400, 'captcha_failed', 'The captcha could not be verified; solve it again and resubmit');
    case 'captcha_unavailable':
      return error.reason === 'no_secret'
        ? new ApiError(
            503,
            'captcha_unavailable',
            'This workspace has no captcha secret configured; the form cannot be checked',
          )
        : new ApiError(
            503,
            'captcha_unavailable',
            'The captcha provider could not be reached; try again shortly',
            {},
            { 'retry-after': '5' },
          );
    case 'idempotency_key_reused':
      return new ApiError(
        409,
        'idempotency_key_reused',
        'This Idempotency-Key was already used with a different request body in the last 24 hours',
      );
    case 'webhook_url_refused':
      return validationFailed({ url: error.reason }, 'The webhook URL is refused; see fields');
    case 'webhook_limit':
      return new ApiError(
        409,
        'webhook_limit',
        `This workspace has reached its limit of ${error.limit} webhook endpoints${error.sandbox ? ' in test mode' : ''}`,
      );
    case 'replay_rate_limited':
      return new ApiError(
        429,
        'rate_limited',
        `Too many replays of this endpoint (at most ${error.limit} an hour); retry in ${error.retryAfterSeconds} s`,
        { scope: 'webhook_replay', retry_after: error.retryAfterSeconds },
        { 'retry-after': String(error.retryAfterSeconds) },
      );
    default: {
      const unknown: never = error;
      throw new Error(`Unknown refusal ${String(unknown)}`);
    }
  }
}

interface AjvLikeError {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

/**
 * `/english_test/overall` → `english_test.overall`; the property named by `required`/`additionalProperties` errors is
 * appended. Keys are shown as sent (JSON-pointer escapes undone), NULs and unpaired surrogates as `\u0000` escapes.
 */
export function fieldName(error: AjvLikeError): string {
  const base = error.instancePath
    .split('/')
    .filter(Boolean)
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
  const child =
    error.keyword === 'required'
      ? error.params.missingProperty
      : error.keyword === 'additionalProperties'
        ? error.params.additionalProperty
        : undefined;
  return printable([base, typeof child === 'string' ? child : ''].filter(Boolean).join('.'));
}

export function describeError(error: AjvLikeError): string {
  switch (error.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not allowed';
    case 'enum':
      return `must be one of: ${(error.params.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'anyOf':
    case 'oneOf':
      return 'has the wrong type';
    case 'const':
      return `must be ${JSON.stringify(error.params.allowedValue)}`;
    case 'refusal':
      return error.message ?? 'is invalid';
    case 'format':
      return error.params.format === 'date-time' ? DATE_TIME_RULE : (error.message ?? 'is invalid');
    case 'pattern':
      // The edge rules the request schemas state (src/http/stated-rules.ts), in the words of their own checks.
      if (error.params.pattern === DATE_TIME_PATTERN) return DATE_TIME_RULE;
      if (error.params.pattern === NO_NUL_PATTERN) return `contains ${textProblem('\u0000')}`;
      return error.message ?? 'is invalid';
    default:
      return error.message ?? 'is invalid';
  }
}

/** Problems found by `valueProblems` (src/http/edge-values.ts), never a union's inner error. */
const EDGE_KEYWORDS = new Set(['text', 'finite']);

/** Ajv errors → one `fields` map, first problem per field; a union's inner errors are folded into its own. */
export function fieldsFromValidation(errors: AjvLikeError[], location: string): Record<string, string> {
  const fields: Record<string, string> = {};
  const unions = (e: AjvLikeError) => e.keyword === 'anyOf' || e.keyword === 'oneOf';
  const anyOfPaths = new Set(errors.filter(unions).map((e) => e.instancePath));
  for (const error of errors) {
    if (
      !unions(error) &&
      anyOfPaths.has(error.instancePath) &&
      error.keyword !== 'required' &&
      error.keyword !== 'additionalProperties' &&
      !EDGE_KEYWORDS.has(error.keyword)
    )
      continue;
    const name = fieldName(error) || location;
    if (!(name in fields)) fields[name] = describeError(error);
  }
  return fields;
}

export function errorBody(request: FastifyRequest, code: string, message: string, extras: ErrorExtras = {}) {
  return { error: code, message, ...extras, request_id: String(request.id) };
}

const FASTIFY_CODES: Record<string, { status: number; code: string; message: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    code: 'unsupported_media_type',
    message: 'Send the body as JSON with Content-Type: application/json',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    status: 400,
    code: 'invalid_request',
    message: 'The Content-Length header does not match the body',
  },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'payload_too_large', message: 'The request body is too large' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'invalid_json', message: 'The body is empty; send a JSON object' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'invalid_json', message: 'The body is not valid JSON' },
};

/**
 * The refusal to try again later for a failure of the storage, or null for any other error: a pool checkout that
 * timed out (overloaded) or the database out of reach (service_unavailable, logged once per outage, not once per
 * request: thousands are refused while a server restarts). The API's and the console's error handlers both use it.
 */
export function storageUnavailable(error: Error, request: FastifyRequest): ApiError | null {
  if (poolTimedOut(error)) return overloaded();
  if (!databaseUnreachable(error)) return null;
  if (databaseOutage.failed())
    request.log.error({ err: error }, 'the database cannot be reached: answering 503 until a connection is made');
  return serviceUnavailable();
}

/** Maps anything thrown during a request to the Error body, never leaking internals. */
export function handleError(
  thrown: FastifyError | ApiError | Error,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  const error = isCommandError(thrown) ? commandErrorAnswer(thrown) : thrown;
  if (error instanceof ApiError) {
    reply.headers(error.headers);
    return reply.status(error.statusCode).send(errorBody(request, error.code, error.message, error.extras));
  }
  const fastifyError = error as FastifyError;
  if (fastifyError.validation && fastifyError.validationContext === 'params') {
    // A path segment that is not a well-formed id names nothing: 404, like an id that names nothing here (the spec
    // lists no 400 for reads and deletes by id).
    return reply.status(404).send(errorBody(request, 'not_found', 'Nothing exists at this path'));
  }
  if (fastifyError.validation) {
    const fields = fieldsFromValidation(
      fastifyError.validation as AjvLikeError[],
      fastifyError.validationContext ?? 'body',
    );
    return reply
      .status(400)
      .send(errorBody(request, 'validation_failed', 'Some fields are invalid; see fields', { fields }));
  }
  const known = fastifyError.code ? FASTIFY_CODES[fastifyError.code] : undefined;
  if (known) return reply.status(known.status).send(errorBody(request, known.code, known.message));
  if (error instanceof SyntaxError && fastifyError.statusCode === 400) {
    return reply.status(400).send(errorBody(request, 'invalid_json', 'The body is not valid JSON'));
  }
  const status = fastifyError.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return reply.status(status).send(errorBody(request, 'invalid_request', 'The request could not be understood'));
  }
  const unavailable = storageUnavailable(error, request);
  if (unavailable) return handleError(unavailable, request, reply);
  request.log.error({ err: error }, 'unhandled error');
  return reply
    .status(500)
    .send(
      errorBody(
        request,
        'internal_error',
        'Something went wrong on our side; try again, and quote the request_id if it persists',
      ),
    );
}

/** The longest path segment the router reads (fastify's `maxParamLength`); a longer one answers 414. */
export const MAX_PARAM_LENGTH = 100;

/**
 * fastify's `frameworkErrors`: what its router refuses before any route is chosen (so before the onRequest hook that
 * sets the `Request-Id` header), answered in the Error shape like everything else.
 */
export function handleFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  reply.header('request-id', request.id);
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      return handleError(
        new ApiError(400, 'invalid_request', 'The request path is not a valid URL path; check its percent-encoding'),
        request,
        reply,
      );
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return handleError(
        new ApiError(
          414,
          'uri_too_long',
          `A path segment is longer than the ${MAX_PARAM_LENGTH} characters this service reads`,
        ),
        request,
        reply,
      );
    default:
      return handleError(error, request, reply);
  }
}
