import { LeadCreate } from '../schemas/lead.js';
import { bodyChecker } from './body-check.js';

/**
 * What POST /v1/leads' schema finds wrong with a body, by field, in the API's words: the same LeadCreate schema,
 * compiled by the same ajv settings with the same edge checks as the route (src/http/app.ts). The console's New lead
 * form and a CSV import's rows go through it, so that each is refused exactly when the API would refuse it.
 */
export const leadCreateProblems = bodyChecker(LeadCreate);
