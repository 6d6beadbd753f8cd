import type { CommandError } from '../commands/errors.js';

/**
 * A command's refusal as the CLI says it: one sentence, with the refusal's code where the API has one, so an operator
 * can look it up in the interface spec. The HTTP edge says the same refusals in the Error shape (src/http/errors.ts).
 */
export function commandErrorSentence(error: CommandError): string {
  switch (error.refusal) {
    case 'rule':
      return `Refused (${error.code}): ${error.message}${error.fields ? ` ${JSON.stringify(error.fields)}` : ''}`;
    case 'not_found':
      return `No ${error.what} with this id in this workspace and mode`;
    case 'quota_exceeded':
      return `Refused (quota_exceeded): the workspace has used its monthly quota of ${error.limit} new leads`;
    case 'captcha_failed':
      return 'Refused (captcha_failed): the captcha could not be verified';
    case 'idempotency_key_reused':
      return 'Refused (idempotency_key_reused): the Idempotency-Key was already used with a different request';
    case 'webhook_url_refused':
      return `Refused (validation_failed): the webhook URL is refused: ${error.reason}`;
    case 'webhook_limit':
      return `Refused (webhook_limit): the workspace has reached its limit of ${error.limit} webhook endpoints${error.sandbox ? ' in test mode' : ''}`;
    default: {
      const unknown: never = error;
      throw new Error(`Unknown refusal ${String(unknown)}`);
    }
  }
}
