import { Type } from 'typebox';

/** The body of every non-2xx answer. */
export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'snake_case error code' }),
    message: Type.String(),
    // A map written with additionalProperties, not Type.Record: the serialiser keeps only the keys a Record's
    // pattern (^.*$) matches, and so would drop a field name holding a line break.
    fields: Type.Optional(
      Type.Object(
        {},
        { additionalProperties: Type.String(), description: 'field name to problem; with validation_failed' },
      ),
    ),
    scope: Type.Optional(Type.String({ description: 'with rate_limited' })),
    retry_after: Type.Optional(Type.Integer({ description: 'seconds; with rate_limited' })),
    required: Type.Optional(Type.String({ description: 'with insufficient_scope' })),
    request_id: Type.String(),
  },
  { additionalProperties: false },
);

/** What each refusal of the public API means, as its OpenAPI response description. */
const PUBLIC_ERRORS: Record<number, string> = {
  400: 'The request is invalid: `validation_failed` with `fields`, or a business-rule code such as `consent_required`',
  401: '`invalid_api_key`: the key is missing, unknown, revoked or expired',
  402: '`tenant_suspended`: the workspace is suspended',
  403: '`insufficient_scope` (with `required`), `ip_not_allowed`, `origin_not_allowed` or `plan_feature_unavailable`',
  404: '`not_found`: nothing with this id in the workspace and mode of the key',
  409: 'The resource is in a state that refuses the operation, for example `lead_locked` or `webhook_limit`',
  429: '`rate_limited` (with `scope`, `retry_after` and `Retry-After`) or `quota_exceeded`',
  503: 'A service this operation needs is unavailable for a moment (`captcha_unavailable`); see `Retry-After`',
};

/**
 * Error answers for an endpoint's OpenAPI description: the Error body, described per status (`x-response-description`
 * is @fastify/swagger's way to describe a response without changing its schema).
 */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorBody> {
  return describedErrors(PUBLIC_ERRORS, statuses);
}

export function describedErrors(
  meanings: Record<number, string>,
  statuses: number[],
): Record<number, typeof ErrorBody> {
  return Object.fromEntries(
    statuses.map((status) => {
      const meaning = meanings[status];
      if (!meaning) throw new Error(`no description for a ${status} answer`);
      return [status, { ...ErrorBody, 'x-response-description': meaning }];
    }),
  );
}

/** A success answer's schema with what the answer means in the OpenAPI document; its shape is unchanged. */
export function answer<T extends object>(schema: T, meaning: string): T {
  return { ...schema, 'x-response-description': meaning };
}

export const COMMON_ERRORS = [400, 401, 402, 403, 429] as const;

/**
 * What any operation may answer whatever it does itself: Node's HTTP parser, the router, the body parser, load
 * shedding, shutdown and the last-resort handler (src/http/wire.ts, errors.ts, observability.ts, app.ts).
 */
const EVERY_OPERATION: Record<number, string> = {
  400:
    '`invalid_request`: not valid HTTP/1.1 (a missing Host, a malformed path or header); `validation_failed` for a ' +
    'control character in a header',
  408: '`request_timeout`: the request did not arrive in time',
  417: '`expectation_failed`: an `Expect` header other than `100-continue`',
  431: '`headers_too_large`: the request line and headers are larger than 16 KB',
  500: '`internal_error`: something went wrong on our side; quote the `request_id`',
  503:
    '`overloaded` or `service_unavailable` (the database cannot be reached; both with `Retry-After`) or ' +
    '`shutting_down`: retry in a moment',
};

/** What an operation with a path parameter may answer besides. */
const WITH_PATH_PARAMETERS: Record<number, string> = {
  404: '`not_found`: a path segment is not a well-formed id',
  414: '`uri_too_long`: a path segment is longer than 100 characters',
};

/** What an operation whose method carries a body (POST, PUT, PATCH, DELETE) may answer besides. */
const WITH_BODY: Record<number, string> = {
  400: '`invalid_json`: the body is empty, not UTF-8 or not JSON',
  413: '`payload_too_large`: the body is larger than this service reads',
  415: '`unsupported_media_type`: a body type, charset or Content-Encoding this operation does not take',
};

/** What an operation behind an API key may answer besides (src/http/auth.ts). */
const WITH_API_KEY: Record<number, string> = {
  401: PUBLIC_ERRORS[401]!,
  402: PUBLIC_ERRORS[402]!,
  403: PUBLIC_ERRORS[403]!,
  429: PUBLIC_ERRORS[429]!,
};

/** What an operation behind the staff credential may answer besides (src/http/admin-auth.ts). */
const WITH_STAFF_TOKEN: Record<number, string> = {
  401: '`invalid_admin_token`: the admin token is missing or wrong',
  429: '`rate_limited` (with `retry_after` and `Retry-After`): too many failed authentications from this address',
};

export interface OperationTraits {
  pathParameters: boolean;
  body: boolean;
  auth: 'api_key' | 'staff' | 'none';
}

type DescribedResponse = Record<string, unknown> & { 'x-response-description'?: string };

/**
 * An operation's responses with every status it can answer declared in the Error shape: those the route declares
 * keep their schema, and a meaning they do not state yet is added to their description.
 */
export function withEveryAnswer(
  responses: Record<string, DescribedResponse>,
  traits: OperationTraits,
): Record<string, DescribedResponse> {
  const meanings = [
    EVERY_OPERATION,
    traits.pathParameters ? WITH_PATH_PARAMETERS : {},
    traits.body ? WITH_BODY : {},
    traits.auth === 'api_key' ? WITH_API_KEY : traits.auth === 'staff' ? WITH_STAFF_TOKEN : {},
  ];
  const completed = { ...responses };
  for (const table of meanings)
    for (const [status, meaning] of Object.entries(table)) {
      const declared = completed[status];
      const said = declared?.['x-response-description'];
      if (!declared) completed[status] = { ...ErrorBody, 'x-response-description': meaning };
      else if (said !== undefined && !said.includes(meaning))
        completed[status] = { ...declared, 'x-response-description': `${said}; ${meaning}` };
    }
  return completed;
}
