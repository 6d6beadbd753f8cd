/** The captcha providers a workspace can use; each has a siteverify endpoint taking a form-encoded POST. */
export type CaptchaProvider = 'turnstile' | 'hcaptcha' | 'recaptcha';

export interface CaptchaCheck {
  provider: CaptchaProvider;
  verifyUrl: string;
  secret: string;
  token: string;
  siteKey: string | null;
  remoteIp: string;
  /** The host of the page the form sits on (from the request's Origin); a provider-reported hostname must match it. */
  expectedHostname: string | null;
  timeoutMs?: number;
}

export type CaptchaVerdict = { ok: true } | { ok: false; reason: string };

/** The provider could not be asked (network error, timeout, non-JSON or non-2xx answer). */
export class CaptchaProviderUnreachableError extends Error {
  override name = 'CaptchaProviderUnreachableError';
}

/** reCAPTCHA v3 answers with a score from 0 (bot) to 1 (human); below this the submission is refused. */
export const RECAPTCHA_MIN_SCORE = 0.5;

interface SiteverifyAnswer {
  success?: unknown;
  hostname?: unknown;
  score?: unknown;
  'error-codes'?: unknown;
}

/**
 * Asks the provider whether the token is good. Turnstile, hCaptcha and reCAPTCHA share the shape: POST
 * secret/response/remoteip (hCaptcha also sitekey) → `{ success, hostname, "error-codes" }` (reCAPTCHA v3 adds `score`).
 */
export async function verifyCaptcha(check: CaptchaCheck): Promise<CaptchaVerdict> {
  const form = new URLSearchParams({ secret: check.secret, response: check.token, remoteip: check.remoteIp });
  if (check.provider === 'hcaptcha' && check.siteKey) form.set('sitekey', check.siteKey);
  let answer: SiteverifyAnswer;
  try {
    const response = await fetch(check.verifyUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
      signal: AbortSignal.timeout(check.timeoutMs ?? 5000),
      redirect: 'error',
    });
    if (!response.ok)
      throw new CaptchaProviderUnreachableError(`${check.provider} siteverify answered ${response.status}`);
    answer = (await response.json()) as SiteverifyAnswer;
  } catch (error) {
    if (error instanceof CaptchaProviderUnreachableError) throw error;
    throw new CaptchaProviderUnreachableError(
      `${check.provider} siteverify failed: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (answer.success !== true) {
    const codes = Array.isArray(answer['error-codes']) ? answer['error-codes'].join(', ') : 'no reason given';
    return { ok: false, reason: codes };
  }
  if (
    check.expectedHostname &&
    typeof answer.hostname === 'string' &&
    answer.hostname.toLowerCase() !== check.expectedHostname.toLowerCase()
  ) {
    return { ok: false, reason: `solved on ${answer.hostname}` };
  }
  if (check.provider === 'recaptcha' && typeof answer.score === 'number' && answer.score < RECAPTCHA_MIN_SCORE) {
    return { ok: false, reason: `score ${answer.score}` };
  }
  return { ok: true };
}
