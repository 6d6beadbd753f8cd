import type { StoreTransaction } from '../events/event-store.js';
import { RuleError } from '../domain/rule-error.js';
import { NotFoundError } from './errors.js';
import { findApplication } from '../projections/applications.js';
import { findLeadRow } from '../projections/leads-queries.js';

/** What a task, invoice or document belongs to: a lead or an application (exactly one). */
export type Subject = { lead_id: string; application_id: null } | { lead_id: null; application_id: string };

/** The subject of a request body or CLI options: exactly one of the two ids. */
export function subjectOf(input: { lead_id?: string | undefined; application_id?: string | undefined }): Subject {
  if ((input.lead_id === undefined) === (input.application_id === undefined))
    throw new RuleError('invalid', 'validation_failed', 'Name exactly one lead or one application', {
      lead_id: 'exactly one of lead_id and application_id',
    });
  return input.lead_id !== undefined
    ? { lead_id: input.lead_id, application_id: null }
    : { lead_id: null, application_id: input.application_id! };
}

/** Checks, inside the transaction, that the lead or application exists in the workspace and mode; 404 otherwise. */
export async function checkSubject(tx: StoreTransaction, subject: Subject): Promise<void> {
  const { tenantId, sandbox } = tx.context;
  if (subject.lead_id !== null) {
    if (!(await findLeadRow(tx.sql, tenantId, sandbox, subject.lead_id))) throw new NotFoundError('lead');
  } else if (!(await findApplication(tx.sql, tenantId, sandbox, subject.application_id))) {
    throw new NotFoundError('application');
  }
}
