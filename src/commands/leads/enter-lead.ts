import type { AppServices } from '../../bootstrap.js';
import type { CommandContext } from '../../events/types.js';
import { requestHash } from '../../intake/idempotency.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { captureLead, type CaptureAnswer, type CaptureChannel } from './capture-lead.js';
import { acceptedSubmission } from './submit-lead.js';

/** The console's channel: live data, the `console` source, its form keys kept apart from API keys' (migration 180). */
export const CONSOLE_CHANNEL: CaptureChannel = { kind: 'console', mode: 'live', source_key: 'console' };

/** A lead typed in by a member: the POST /v1/leads body the form made, the schema's problems and the form's key. */
export interface LeadEntry {
  workspace: Workspace;
  body: unknown;
  schemaProblems: Readonly<Record<string, string>>;
  /** The form's one-time key, the capture's Idempotency-Key: a second submit of one form replays the first answer. */
  formKey: string;
  /** The member as actor. */
  context: (now: Date) => CommandContext;
}

/**
 * A lead typed in the console, decided as POST /v1/leads decides a secret key's (the same checks in the same order,
 * the same capture: duplicate by phone or email, assignment, quota), with the member as actor and the console as
 * source. There is no captcha: the member signed in.
 */
export async function enterLead(
  services: Pick<AppServices, 'store' | 'now'>,
  entry: LeadEntry,
): Promise<CaptureAnswer> {
  const { body, submission } = acceptedSubmission({ ...entry, keyKind: 'console' }, services.now());
  return captureLead(services, {
    workspace: entry.workspace,
    key: CONSOLE_CHANNEL,
    submission,
    idempotency: { key: entry.formKey, requestHash: requestHash(body) },
    captcha: null,
    context: entry.context,
    now: services.now,
  });
}
