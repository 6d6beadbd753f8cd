import type { AppServices } from '../../bootstrap.js';
import type { KeyLookup } from '../../keys/repository.js';
import { CaptchaProviderUnreachableError, verifyCaptcha, type CaptchaVerdict } from '../../intake/captcha.js';
import type { Workspace } from '../../workspaces/workspace.js';
import { CaptchaUnavailableError } from '../errors.js';

type WidgetCaptcha = Workspace['settings']['widget']['captcha'];
/** The captcha settings of a workspace that has a provider. */
export type CaptchaToCheck = WidgetCaptcha & { provider: Exclude<WidgetCaptcha['provider'], 'none'> };

/** Where a submission's captcha is reported when its provider cannot be reached (the request's logger). */
export interface CaptchaLog {
  warn(details: { err: Error }, message: string): void;
}

/** The captcha settings a submission with this key is verified against (public keys of a workspace with a provider), else null. */
export function captchaToCheck(workspace: Workspace, key: Pick<KeyLookup, 'kind'>): CaptchaToCheck | null {
  const captcha = workspace.settings.widget.captcha;
  return key.kind === 'public' && captcha.provider !== 'none' ? { ...captcha, provider: captcha.provider } : null;
}

/**
 * Asks the workspace's provider about the token. Refuses with CaptchaUnavailableError when the workspace has no
 * secret or the provider cannot be reached; a token the provider refuses is a verdict, not an error.
 */
export async function captchaVerdict(
  services: Pick<AppServices, 'config' | 'secretBox'>,
  captcha: CaptchaToCheck,
  submitted: { token: string; remoteIp: string; origin: string | null; log: CaptchaLog },
): Promise<CaptchaVerdict> {
  if (!captcha.sealed_secret) throw new CaptchaUnavailableError('no_secret');
  try {
    return await verifyCaptcha({
      provider: captcha.provider,
      verifyUrl: services.config.captchaVerifyUrls[captcha.provider],
      secret: services.secretBox.captchaSecrets.open(captcha.sealed_secret),
      token: submitted.token,
      siteKey: captcha.site_key,
      remoteIp: submitted.remoteIp,
      expectedHostname: submitted.origin ? new URL(submitted.origin).hostname : null,
    });
  } catch (error) {
    if (error instanceof CaptchaProviderUnreachableError) {
      submitted.log.warn({ err: error }, 'captcha provider unavailable');
      throw new CaptchaUnavailableError('provider_unreachable');
    }
    throw error;
  }
}
