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
