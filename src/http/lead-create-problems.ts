import { LeadCreate } from '../schemas/lead.js';
import { apiAjv } from './api-ajv.js';
import { withEdgeChecks } from './edge-values.js';
import { fieldsFromValidation } from './errors.js';

let validator: ReturnType<typeof withEdgeChecks> | undefined;

/**
 * What POST /v1/leads' schema finds wrong with a body, by field, in the API's words: the same LeadCreate schema,
 * compiled by the same ajv settings with the same edge checks as the route (src/http/app.ts). A CSV import's rows
 * go through it so that a row is refused exactly when the API would refuse it.
 */
export function leadCreateProblems(body: unknown): Record<string, string> {
  if (!validator) {
    const compiled = apiAjv({ coerceTypes: false }).compile(LeadCreate);
    validator = withEdgeChecks(() => compiled, LeadCreate, false);
  }
  if (validator(body)) return {};
  return fieldsFromValidation(validator.errors ?? [], 'body');
}
