import { Refusal } from '../domain/refusal.js';

/** What a task, invoice or document belongs to: a lead or an application (exactly one). */
export type Subject = { lead_id: string; application_id: null } | { lead_id: null; application_id: string };

/** What a body naming no subject or both is told, on the field `lead_id`. */
export const ONE_SUBJECT_RULE = 'exactly one of lead_id and application_id';

/** The subject of a request body or CLI options: exactly one of the two ids. */
export function subjectOf(input: { lead_id?: string | undefined; application_id?: string | undefined }): Subject {
  if ((input.lead_id === undefined) === (input.application_id === undefined))
    throw new Refusal('invalid', 'validation_failed', 'Name exactly one lead or one application', {
      lead_id: ONE_SUBJECT_RULE,
    });
  return input.lead_id !== undefined
    ? { lead_id: input.lead_id, application_id: null }
    : { lead_id: null, application_id: input.application_id! };
}
