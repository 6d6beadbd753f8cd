import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  /** The envelope's recipients (RCPT TO), lower case. */
  to: string[];
  from: string;
  mail: ParsedMail;
}

/**
 * A real SMTP server on loopback (the smtp-server package) that keeps what it receives. `stop()` closes it and
 * `start()` opens it again on the same port, so a test can take the mail server away and bring it back.
 */
export class TestSmtpServer {
  readonly received: ReceivedMail[] = [];
  private server: SMTPServer | undefined;
  port = 0;

  static async start(): Promise<TestSmtpServer> {
    const smtp = new TestSmtpServer();
    await smtp.open();
    return smtp;
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  async open(): Promise<void> {
    const server = new SMTPServer({
      authOptional: true,
      // Plain SMTP on loopback: no certificate to trust, and nodemailer does not upgrade without an offer.
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData: (stream, session, callback) => {
        simpleParser(stream)
          .then((mail) => {
            this.received.push({
              to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              mail,
            });
            callback();
          })
          .catch(callback);
      },
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.server.address() as AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
