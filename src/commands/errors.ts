import { Refusal } from '../domain/refusal.js';
import { QuotaExceededError } from '../workspaces/quota.js';

/*
 * The refusals of commands, as data. Each says what was refused in its own terms; the HTTP edge translates every one
 * to the spec's Error shape in one place (`commandErrorAnswer`, src/http/errors.ts) and the CLI to a sentence
 * (`commandErrorSentence`, src/cli/errors.ts). Both switch on `refusal` exhaustively, so a new refusal must be given
 * its answer in both.
 */

/** Nothing with this id exists in the caller's workspace and mode (another tenant's thing is not found either). */
export class NotFoundError extends Error {
  readonly refusal = 'not_found';
  readonly what: string;
  constructor(what: string) {
    super(`No such ${what}`);
    this.what = what;
    this.name = 'NotFoundError';
  }
}

/** A public-key submission whose captcha was not verified. */
export class CaptchaFailedError extends Error {
  readonly refusal = 'captcha_failed';
  constructor() {
    super('The captcha could not be verified');
    this.name = 'CaptchaFailedError';
  }
}

/**
 * A public-key submission's captcha could not be checked: the workspace has no captcha secret (`no_secret`), or the
 * provider did not answer (`provider_unreachable`, worth retrying shortly).
 */
export class CaptchaUnavailableError extends Error {
  readonly refusal = 'captcha_unavailable';
  readonly reason: 'no_secret' | 'provider_unreachable';
  constructor(reason: 'no_secret' | 'provider_unreachable') {
    super(reason === 'no_secret' ? 'The workspace has no captcha secret' : 'The captcha provider could not be reached');
    this.reason = reason;
    this.name = 'CaptchaUnavailableError';
  }
}

/** An Idempotency-Key already used with a different request body. */
export class IdempotencyKeyReusedError extends Error {
  readonly refusal = 'idempotency_key_reused';
  constructor() {
    super('The Idempotency-Key was already used with a different request body');
    this.name = 'IdempotencyKeyReusedError';
  }
}

/** A webhook URL that is not public HTTPS; `reason` says why. */
export class WebhookUrlRefusedError extends Error {
  readonly refusal = 'webhook_url_refused';
  readonly reason: string;
  constructor(reason: string) {
    super(`The webhook URL is refused: ${reason}`);
    this.reason = reason;
    this.name = 'WebhookUrlRefusedError';
  }
}

/** The workspace has as many webhook endpoints (in the mode) as its plan allows. */
export class WebhookLimitError extends Error {
  readonly refusal = 'webhook_limit';
  readonly limit: number;
  readonly sandbox: boolean;
  constructor(limit: number, sandbox: boolean) {
    super(`The workspace has reached its limit of ${limit} webhook endpoints`);
    this.limit = limit;
    this.sandbox = sandbox;
    this.name = 'WebhookLimitError';
  }
}

/** Too many replays of one endpoint's events in a short time: a token bucket per endpoint (src/ratelimit). */
export class ReplayRateLimitedError extends Error {
  readonly refusal = 'replay_rate_limited';
  readonly retryAfterSeconds: number;
  readonly limit: number;
  constructor(retryAfterSeconds: number, limit: number) {
    super(`Too many replays of this endpoint; retry in ${retryAfterSeconds} s`);
    this.retryAfterSeconds = retryAfterSeconds;
    this.limit = limit;
    this.name = 'ReplayRateLimitedError';
  }
}

/** Every refusal a command may throw: the domain's broken rules and the commands' own. */
export type CommandError =
  | Refusal
  | QuotaExceededError
  | NotFoundError
  | CaptchaFailedError
  | CaptchaUnavailableError
  | IdempotencyKeyReusedError
  | WebhookUrlRefusedError
  | WebhookLimitError
  | ReplayRateLimitedError;

const COMMAND_ERRORS = [
  Refusal,
  QuotaExceededError,
  NotFoundError,
  CaptchaFailedError,
  CaptchaUnavailableError,
  IdempotencyKeyReusedError,
  WebhookUrlRefusedError,
  WebhookLimitError,
  ReplayRateLimitedError,
];

export function isCommandError(error: unknown): error is CommandError {
  return COMMAND_ERRORS.some((type) => error instanceof type);
}
