import type { Ajv } from 'ajv';
import { apiAjv } from './api-ajv.js';
import type { TSchema } from 'typebox';
import { withEdgeChecks } from './edge-values.js';
import { fieldsFromValidation } from './errors.js';

/**
 * A JSON body's problems by field, exactly as the API's routes find them (the same ajv options and edge checks), for
 * a body made elsewhere than a request: the console's new-lead form builds the POST /v1/leads body and checks it here.
 */
export function bodyChecker(schema: TSchema): (body: unknown) => Record<string, string> {
  const ajv = apiAjv({ coerceTypes: false });
  let compiled: ReturnType<Ajv['compile']> | undefined;
  const check = withEdgeChecks(() => (compiled ??= ajv.compile(schema)), schema, false);
  return (body) => (check(body) ? {} : fieldsFromValidation(check.errors ?? [], 'body'));
}
