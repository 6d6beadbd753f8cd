import type pg from 'pg';
import type { Test } from 'tap';
import { createEndpoint, pauseEndpoint } from '../../src/commands/webhooks/endpoints.js';
import { staffContext } from '../../src/commands/run-command.js';
import { smtpTransport } from '../../src/shared/smtp.js';
import { NotificationMailer } from '../../src/subscribers/notification-mailer.js';
import { NotificationRecorder } from '../../src/subscribers/notification-recorder.js';
import { consoleFixture } from '../console/support.js';
import { seedWorkspace, type TestClock } from '../support/app.js';
import { TestSmtpServer, type ReceivedMail } from '../support/smtp.js';

export const quiet = { info() {}, warn() {}, error() {} };

export type Fixture = Awaited<ReturnType<typeof consoleFixture>>;

/** A console fixture with a real SMTP server on loopback, the notification recorder and a mailer driven by hand. */
export async function notifyFixture(t: Test, clock: TestClock) {
  const smtp = await TestSmtpServer.start();
  t.teardown(() => smtp.stop());
  const f = await consoleFixture(t, { clock, config: { smtpUrl: smtp.url, webhookAllowLoopback: true } });
  const recorder = new NotificationRecorder(f.app.services, quiet);
  const mailer = newMailer(f, smtp);
  t.teardown(() => mailer.stop());
  /** Everything the workers would do next: read the log, notice follow-ups and mornings, then mail. */
  const pump = async () => {
    await caughtUp(f, () => recorder.runOnce());
    await mailer.sendDue();
  };
  return { ...f, smtp, recorder, mailer, pump };
}

/** A second workspace on the same server, with an owner and a counsellor (branch DEL) of its own. */
export const otherWorkspace = (f: Fixture) =>
  seedWorkspace(f.app, {
    users: [
      { name: 'Elsewhere owner', email: 'owner@elsewhere.example', role: 'owner', branch: 'DEL' },
      { name: 'Elsewhere counsellor', email: 'counsellor@elsewhere.example', role: 'counsellor', branch: 'DEL' },
    ],
  });

export function newMailer(f: Fixture, smtp: TestSmtpServer) {
  return new NotificationMailer(
    { pool: f.app.pool, now: f.app.services.now, from: 'crm@northstar.example', publicBaseUrl: f.app.baseUrl },
    smtpTransport(smtp.url),
    quiet,
  );
}

export async function capture(f: Fixture, lead: Record<string, unknown>): Promise<string> {
  const response = await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { consent: true, ...lead },
  });
  if (response.status !== 201) throw new Error(`capture answered ${response.status}`);
  return ((await response.json()) as { id: string }).id;
}

/** Mails to one address, in the order received. */
export const mailTo = (smtp: TestSmtpServer, email: string): ReceivedMail[] =>
  smtp.received.filter((m) => m.to.includes(email.toLowerCase()));

/** An endpoint of the workspace, paused by the delivery worker's rule. */
export async function pausedEndpoint(f: Fixture): Promise<string> {
  const context = staffContext(f.ws.workspace.id, false, { type: 'user', user_id: null }, f.app.services.now());
  const { endpoint } = await createEndpoint(f.app.services, context, f.ws.workspace, {
    url: 'https://127.0.0.1:9/hooks?token=secret-in-query',
    events: ['lead.created'],
  });
  await pauseEndpoint(f.app.services, endpoint.id, 50);
  return endpoint.id;
}

/** The unsubscribe address a mail names in its List-Unsubscribe header, as a path under the app. */
export function unsubscribePathOf(mail: ReceivedMail): string {
  const header = rawHeader(mail, 'list-unsubscribe');
  const url = /<([^>]+)>/.exec(header)?.[1];
  if (!url) throw new Error('no List-Unsubscribe header');
  return new URL(url).pathname;
}

/** A header as the mail carried it (mailparser folds List-* headers into objects; the raw line is what was sent). */
export function rawHeader(mail: ReceivedMail, name: string): string {
  const line = mail.mail.headerLines.find((h) => h.key === name)?.line ?? '';
  return line
    .slice(line.indexOf(':') + 1)
    .replace(/\r?\n\s+/g, ' ')
    .trim();
}

/**
 * Runs passes until the subscriber's checkpoint reaches the log's last event: the log is read only up to the oldest
 * transaction still open anywhere on the server, so one pass may stop short while another database's work runs.
 */
export async function caughtUp(f: Fixture, pass: () => Promise<void>, ms = 90_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    await pass();
    const behind = await f.app.pool.query(
      `SELECT 1 FROM events e, subscription_checkpoints c
        WHERE c.name = 'member-notifications' AND (e.tx_id, e.position) > (c.tx_id, c.position) LIMIT 1`,
    );
    if (behind.rowCount === 0) return;
    if (Date.now() > end) throw new Error('the notifications subscriber did not catch up');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Counts the statements sent on the pool's clients while `run` runs (each client patched once, on acquire): what a
 * batch costs in round trips.
 */
export function statementCounter(pool: pg.Pool) {
  const statements: string[] = [];
  let counting = false;
  const patched = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => {
    if (patched.has(client)) return;
    patched.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const first = args[0];
      if (counting) statements.push(typeof first === 'string' ? first : String((first as { text?: string }).text));
      return query(...args);
    };
  });
  return async <T>(run: () => Promise<T>): Promise<{ result: T; statements: string[] }> => {
    statements.length = 0;
    counting = true;
    try {
      return { result: await run(), statements: [...statements] };
    } finally {
      counting = false;
    }
  };
}
