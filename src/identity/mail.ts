import type { Config } from '../config.js';
import { smtpTransport, type MailTransport } from '../shared/smtp.js';

/** How staff mail leaves: SMTP_URL's transport (the owner notices' path), or none when it is unset. */
export type StaffMailer = (message: { to: string; subject: string; text: string }) => Promise<boolean>;

/** Sends through SMTP_URL; without it nothing is sent and the caller shows the link instead (false). */
export function staffMailer(config: Pick<Config, 'smtpUrl' | 'smtpFrom'>, transport?: MailTransport): StaffMailer {
  return async (message) => {
    if (!transport && !config.smtpUrl) return false;
    const via = transport ?? smtpTransport(config.smtpUrl!);
    try {
      await via.sendMail({ from: config.smtpFrom, ...message });
      return true;
    } finally {
      if (!transport) via.close();
    }
  };
}
