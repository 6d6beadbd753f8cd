import { isCommandError } from '../errors.js';

/** The words a field of a refused command is named with in a bulk action's list of refusals. */
const FIELD_WORDS: Record<string, string> = {
  owner_email: 'The owner',
  stage_key: 'The stage',
  lost_reason_key: 'The lost reason',
  assignee: 'The assignee',
  title: 'The title',
  due_at: 'The due time',
};

const sentence = (text: string) => (/[.!?]$/.test(text) ? text : `${text}.`);

/**
 * Why a command refused one item of a bulk action, in words a member reads beside the row (the item's reason); none
 * for an error that is no refusal (a fault: the runner tries the item again).
 */
export function refusalReason(error: unknown): string | undefined {
  if (!isCommandError(error)) return undefined;
  if (error.refusal === 'not_found') return `There is no such ${error.what} any more.`;
  if (error.refusal === 'rule' && error.fields && Object.keys(error.fields).length > 0)
    return Object.entries(error.fields)
      .map(([field, text]) => sentence(`${FIELD_WORDS[field] ?? field.replaceAll('_', ' ')} ${text}`))
      .join(' ');
  return sentence(error.message);
}
