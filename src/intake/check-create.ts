import type { CaptureKind } from './idempotency.js';
import type { WorkspaceSettings } from '../workspaces/workspace.js';
import { normaliseSubmission, type LeadCreateBody, type LeadSubmission } from '../domain/leads/submission.js';

export interface CreateCheck {
  /** Every problem found, by field (consent left out: it is answered on its own). */
  problems: Record<string, string>;
  /** The body, when it is a JSON object at all. */
  body: LeadCreateBody | null;
  /** The normalised submission; the one the capture uses when there is no problem. */
  submission: LeadSubmission | null;
}

/**
 * Every problem of a LeadCreate body: what the schema found (`schemaProblems`) and the business rules together, one
 * problem per field. A public key's submission also needs a captcha token.
 */
export function checkLeadCreate(
  raw: unknown,
  schemaProblems: Readonly<Record<string, string>>,
  keyKind: CaptureKind,
  settings: WorkspaceSettings,
  now: Date,
): CreateCheck {
  const problems: Record<string, string> = {};
  for (const field in schemaProblems) if (field !== 'consent') problems[field] = schemaProblems[field]!;
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    return {
      problems: Object.keys(problems).length ? problems : { body: 'must be a JSON object' },
      body: null,
      submission: null,
    };
  const body = raw as LeadCreateBody;
  const refused = new Set(Object.keys(problems).map((field) => field.split('.')[0]!));
  const submission = normaliseSubmission(body, settings, now, problems, refused);
  if (
    keyKind === 'public' &&
    !refused.has('captcha_token') &&
    (typeof body.captcha_token !== 'string' || body.captcha_token.trim() === '')
  ) {
    problems.captcha_token = 'is required with a public key';
  }
  return { problems, body, submission };
}
