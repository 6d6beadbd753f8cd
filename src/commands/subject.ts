import type { StoreTransaction } from '../events/event-store.js';
import { RuleError } from '../domain/rule-error.js';
import { NotFoundError } from './errors.js';
import { findApplication } from '../projections/applications.js';
import { findLeadRow } from '../projections/leads-queries.js';
import { erasedAt } from './leads/erase-copies.js';

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

/**
 * The lead whose person the subject belongs to (an application's lead), checked inside the transaction: 404 when the
 * lead or application does not exist in the workspace and mode. An erased person takes nothing new that may name
 * them (a task's title, an invoice's lines, a document): 409 `lead_erased`.
 */
export async function personOfSubject(tx: StoreTransaction, subject: Subject): Promise<string> {
  const { tenantId, sandbox } = tx.context;
  let person: string;
  if (subject.lead_id !== null) {
    if (!(await findLeadRow(tx.sql, tenantId, sandbox, subject.lead_id))) throw new NotFoundError('lead');
    person = subject.lead_id;
  } else {
    const application = await findApplication(tx.sql, tenantId, sandbox, subject.application_id);
    if (!application) throw new NotFoundError('application');
    person = application.lead_id;
  }
  if (await erasedAt(tx.sql, tenantId, person))
    throw new RuleError('conflict', 'lead_erased', 'This lead was erased: it takes nothing new that may name them');
  return person;
}
