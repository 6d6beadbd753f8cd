import { Ajv, type Options as AjvOptions } from 'ajv';
import addFormats from 'ajv-formats';
import type { TSchema } from 'typebox';
import { CANONICAL_UUID, isServiceDateTime, withEdgeChecks } from './edge-values.js';
import { fieldsFromValidation } from './errors.js';

/** The API's ajv: every error at once, nothing removed or defaulted, the service's own date-time and uuid forms. */
export function serviceAjv(options: AjvOptions): Ajv {
  const instance = new Ajv({ allErrors: true, removeAdditional: false, useDefaults: false, strict: false, ...options });
  addFormats.default(instance);
  // Stricter than ajv-formats: only what PostgreSQL, JavaScript and the answers can all hold (src/http/edge-values.ts).
  instance.addFormat('date-time', { type: 'string', validate: isServiceDateTime });
  instance.addFormat('uuid', CANONICAL_UUID);
  return instance;
}

/**
 * A JSON body's problems by field, exactly as the API's routes find them (the same ajv options and edge checks), for
 * a body made elsewhere than a request: the console's new-lead form builds the POST /v1/leads body and checks it here.
 */
export function bodyChecker(schema: TSchema): (body: unknown) => Record<string, string> {
  const ajv = serviceAjv({ coerceTypes: false });
  let compiled: ReturnType<Ajv['compile']> | undefined;
  const check = withEdgeChecks(() => (compiled ??= ajv.compile(schema)), schema, false);
  return (body) => (check(body) ? {} : fieldsFromValidation(check.errors ?? [], 'body'));
}
