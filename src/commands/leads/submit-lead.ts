import type { AppServices } from '../../bootstrap.js';
import { Refusal } from '../../domain/refusal.js';
import type { CommandContext } from '../../events/types.js';
import type { KeyLookup } from '../../keys/repository.js';
import { checkLeadCreate } from '../../intake/check-create.js';
import { findAnswer, idempotencyScope, requestHash, type CaptureKind } from '../../intake/idempotency.js';
import { spamReason } from '../../intake/spam.js';
import type { LeadCreateBody, LeadSubmission } from '../../domain/leads/submission.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { IdempotencyKeyReusedError } from '../errors.js';
import { captchaToCheck, captchaVerdict, type CaptchaLog } from './captcha-check.js';
import { captureLead, type CaptureAnswer } from './capture-lead.js';

/** A POST /v1/leads as the route parsed it: who sent it, the body as sent and what the schema found wrong with it. */
export interface LeadRequest {
  workspace: Workspace;
  key: KeyLookup;
  /** The request's Origin, checked against the key's allowed origins (public keys), else null. */
  origin: string | null;
  remoteIp: string;
  body: unknown;
  /** The schema's problems with the body, by field. */
  schemaProblems: Readonly<Record<string, string>>;
  idempotencyKey: string | null;
  /** The command context for the time the write was registered at. */
  context: (now: Date) => CommandContext;
  log: CaptchaLog;
}

type LeadServices = Pick<AppServices, 'store' | 'pool' | 'config' | 'secretBox' | 'now'>;

/**
 * POST /v1/leads, decided in order: the body's problems (400 validation_failed, a missing consent among them), then
 * consent (400 consent_required), the spam rules (400 spam_detected), the answer already given for a repeated
 * Idempotency-Key (before the captcha, whose token is single-use), the captcha verdict, and the capture itself.
 */
export async function submitLead(services: LeadServices, request: LeadRequest): Promise<CaptureAnswer> {
  const now = services.now();
  const { body, submission } = acceptedSubmission({ ...request, keyKind: request.key.kind }, now);
  const idempotency =
    request.idempotencyKey === null ? null : { key: request.idempotencyKey, requestHash: requestHash(body) };
  const captcha = captchaToCheck(request.workspace, request.key);
  // A repeat must not need its (single-use) captcha token verified again, so when a captcha will be checked the
  // first answer is looked up before it; otherwise the capture's own read, under the key's lock, finds it.
  if (idempotency && captcha) {
    const earlier = await earlierAnswer(services, request, idempotency, now);
    if (earlier) return earlier;
  }
  const verdict = captcha
    ? await captchaVerdict(services, captcha, {
        token: body.captcha_token ?? '',
        remoteIp: request.remoteIp,
        origin: request.origin,
        log: request.log,
      })
    : null;
  return captureLead(services, {
    workspace: request.workspace,
    key: request.key,
    submission,
    idempotency,
    captcha: verdict,
    context: request.context,
    now: services.now,
  });
}

/** A body to capture, whoever sends it: the body as sent, the schema's problems with it, and the sender's kind. */
export interface SubmittedBody {
  workspace: Workspace;
  body: unknown;
  schemaProblems: Readonly<Record<string, string>>;
  keyKind: CaptureKind;
}

/**
 * The body and its normalised submission, or the refusal of the first rule it breaks: the checks of POST /v1/leads
 * before any lookup, which the console's form and a CSV import's preview and rows run too.
 */
export function acceptedSubmission(
  request: SubmittedBody,
  now: Date,
): { body: LeadCreateBody; submission: LeadSubmission } {
  const { problems, body, submission } = checkLeadCreate(
    request.body,
    request.schemaProblems,
    request.keyKind,
    request.workspace.settings,
    now,
  );
  const consentGiven = body?.consent === true;
  if (Object.keys(problems).length > 0 || !body || !submission) {
    if (!consentGiven) problems.consent = 'must be true';
    throw new Refusal('invalid', 'validation_failed', 'Some fields are invalid; see fields', problems);
  }
  if (!consentGiven)
    throw new Refusal(
      'invalid',
      'consent_required',
      'The enquirer must consent (consent: true) before a lead can be created',
    );
  if (spamReason(body))
    throw new Refusal('invalid', 'spam_detected', 'This submission looks like spam and was not accepted');
  return { body, submission };
}

/** The answer already given for a key, looked up before any work (no lock): the fast path of a retry. */
async function earlierAnswer(
  services: Pick<AppServices, 'pool'>,
  request: Pick<LeadRequest, 'workspace' | 'key'>,
  idempotency: { key: string; requestHash: string },
  now: Date,
): Promise<CaptureAnswer | undefined> {
  const scope = idempotencyScope(request.workspace.id, request.key);
  const earlier = await findAnswer(services.pool, scope, idempotency.key, now);
  if (!earlier) return undefined;
  if (earlier.requestHash !== idempotency.requestHash) throw new IdempotencyKeyReusedError();
  return { ...earlier, replayed: true };
}
