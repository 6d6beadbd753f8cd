import { ONE_SUBJECT_RULE } from '../../commands/subject.js';

/**
 * The options of a body that names exactly one of `lead_id` and `application_id` (tasks, invoices, documents): oneOf,
 * so generated clients and validators know the rule, answered as `subjectOf` answers it (src/commands/subject.ts),
 * on the field `lead_id` (`x-refusal`, src/http/union-errors.ts).
 */
export const EXACTLY_ONE_SUBJECT = {
  oneOf: [{ required: ['lead_id'] }, { required: ['application_id'] }],
  'x-refusal': { fields: ['lead_id'], message: ONE_SUBJECT_RULE },
  description: 'Exactly one of lead_id and application_id',
};
