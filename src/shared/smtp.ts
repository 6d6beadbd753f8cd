import nodemailer from 'nodemailer';

/** What the service's mail is sent through: nodemailer's transport, narrowed to the calls used. */
export interface MailTransport {
  sendMail(message: {
    from: string;
    to: string;
    subject: string;
    text: string;
    messageId?: string;
    headers?: Record<string, string>;
  }): Promise<unknown>;
  close(): void;
}

/** Nodemailer over SMTP_URL, with timeouts well inside the outboxes' leases (60 s). */
export function smtpTransport(url: string): MailTransport {
  return nodemailer.createTransport({
    url,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 20_000,
  });
}
