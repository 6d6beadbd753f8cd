import { Type } from 'typebox';

/** The body of every non-2xx answer. */
export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'snake_case error code' }),
    message: Type.String(),
    fields: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'field name to problem; with validation_failed' })),
    scope: Type.Optional(Type.String({ description: 'with rate_limited' })),
    retry_after: Type.Optional(Type.Integer({ description: 'seconds; with rate_limited' })),
    required: Type.Optional(Type.String({ description: 'with insufficient_scope' })),
    request_id: Type.String(),
  },
  { additionalProperties: false },
);

/** The common error answers of an endpoint, for its OpenAPI description. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorBody> {
  return Object.fromEntries(statuses.map((status) => [status, ErrorBody]));
}

export const COMMON_ERRORS = [400, 401, 402, 403, 429] as const;
