import type { FastifyRequest } from 'fastify';
import type { CommandError } from '../commands/errors.js';
import { staffContext } from '../commands/run-command.js';
import type { Actor } from '../events/types.js';
import { commandErrorAnswer } from '../http/errors.js';
import { ConsoleRefusal, type MemberView } from './context.js';
import { html, type Html } from './html.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The staff member in view as the actor every event of theirs records (as the admin interface records it). */
export function actorOf(view: MemberView): Actor {
  return { type: 'user', user_id: view.member.id, email: view.member.email, name: view.member.name };
}

/** A command's context with the member as actor, on live data (the console shows no sandbox). */
export const contextOf = (view: MemberView) => (now: Date) =>
  staffContext(view.workspace.id, false, actorOf(view), now);

/** An id from the path, or not found: a malformed id names no record, as an unknown one. */
export function idParam(request: FastifyRequest, name = 'id'): string {
  const id = String((request.params as Record<string, string>)[name] ?? '');
  if (!UUID.test(id)) throw new ConsoleRefusal(404, 'There is no such record in this workspace.');
  return id;
}

export function textArea(o: { name: string; label: string; value?: string; error?: string }): Html {
  const id = `f-${o.name}`;
  return html`<div class="field${o.error ? ' invalid' : ''}">
    <label for="${id}">${o.label}</label>
    <textarea
      id="${id}"
      name="${o.name}"
      rows="3"
      ${o.error ? html`aria-invalid="true" aria-describedby="${id}-error"` : ''}
    >
${o.value ?? ''}</textarea>
    ${o.error ? html`<p class="error" id="${id}-error">${o.error}</p>` : ''}
  </div>`;
}

/**
 * Sentences for the domain's refusal codes in the words of the work (the API's own name fields as its callers send
 * them, such as `lost_reason_key`; a member reads the console's labels instead).
 */
const CONSOLE_SENTENCES: Record<string, string> = {
  lost_reason_required: 'Choose a lost reason: a lead moves to the lost stage only with one.',
  lead_locked: 'This lead was converted to an application and can no longer be changed.',
  application_closed: 'This case is closed: set its status to active or on hold before changing it.',
};

/**
 * A command's refusal in words, next to the form's field it names (`fields` maps the command's field to the form's,
 * `labels` the command's field to the words the form shows it with), or for the whole form.
 */
export function refusalErrors(
  error: CommandError,
  fields: Record<string, string> = {},
  whole = 'form',
  labels: Record<string, string> = {},
) {
  const answer = commandErrorAnswer(error);
  const named = error.refusal === 'rule' ? (error.fields ?? {}) : {};
  const errors: Record<string, string> = {};
  for (const [key, text] of Object.entries(named)) {
    const label = labels[key] ?? key.replaceAll('_', ' ');
    errors[fields[key] ?? whole] = `${label.charAt(0).toUpperCase()}${label.slice(1)} ${text}.`.replace(/\.\.$/, '.');
  }
  const sentence = error.refusal === 'rule' ? CONSOLE_SENTENCES[error.code] : undefined;
  if (Object.keys(errors).length === 0) errors[whole] = sentence ?? answer.message;
  return { status: answer.statusCode, errors };
}
