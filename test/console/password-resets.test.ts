import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import t, { type Test } from 'tap';
import { setPassword } from '../../src/identity/accounts.js';
import { smtpTransport } from '../../src/shared/smtp.js';
import { ResetMailer } from '../../src/subscribers/reset-mailer.js';
import { memberOf } from '../identity/support.js';
import { TestSmtpServer } from '../support/smtp.js';
import { recordSql } from '../support/sql-recorder.js';
import { MemoryRateLimitStore } from '../../src/ratelimit/memory-store.js';
import { TestClock, type TestApp } from '../support/app.js';
import { consoleFixture, PASSWORD, shownOnce } from './support.js';

const quiet = { info() {}, warn() {}, error() {} };
const NEW_PASSWORD = 'a brand new password for the viewer';

/** An SMTP server on loopback that holds every message at DATA until `release()`; counts the connections it sees. */
async function heldSmtp(t: Test) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const received: { to: string[]; text: string }[] = [];
  let connections = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onConnect: (_session, callback) => {
      connections += 1;
      callback();
    },
    onData: (stream, session, callback) => {
      void (async () => {
        const mail = await simpleParser(stream);
        await gate;
        received.push({ to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()), text: mail.text ?? '' });
        callback();
      })().catch(callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => {
    release();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const port = (server.server.address() as AddressInfo).port;
  return { url: `smtp://127.0.0.1:${port}`, received, release, connections: () => connections };
}

async function until(what: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!what()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const resetLink = (text: string) => /https?:\/\/\S+(\/console\/reset\/[A-Za-z0-9_-]+)/.exec(text)?.[1];

function forgotFrom(app: TestApp, email: string, address = '203.0.113.9') {
  return fetch(`${app.baseUrl}/console/forgot`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: app.baseUrl, 'x-forwarded-for': address },
    body: new URLSearchParams({ email }),
  });
}

t.test('forgot: the same work whatever the email, and no SMTP while the request is answered', async (t) => {
  const smtp = await heldSmtp(t);
  const f = await consoleFixture(t, { config: { smtpUrl: smtp.url, trustProxy: ['loopback'] } });
  // No mailer runs yet: whatever the form does, it does without one.
  // What each request sends to the database, with the email and the time taken out: the same statements.
  const sent = recordSql(t);
  const shapeOf = async (email: string) => {
    const from = sent.length;
    const answer = await forgotFrom(f.app, email);
    const statements = sent.slice(from).map((s) => s.text);
    return { status: answer.status, text: await answer.text(), statements };
  };
  const member = await shapeOf(memberOf('viewer'));
  const nobody = await shapeOf('nobody@northstar.example');
  t.equal(member.status, 200);
  t.equal(nobody.status, 200);
  t.equal(member.text, nobody.text, 'the same page');
  t.same(member.statements, nobody.statements, 'the same statements, in the same order');
  t.ok(
    member.statements.some((s) => s.includes('INSERT INTO staff_reset_requests')),
    'each wrote its request to the outbox',
  );
  t.equal(smtp.connections(), 0, 'no SMTP connection while the requests were answered');

  // With the mailer running and the SMTP server holding the message, the form still answers at once.
  const running = new ResetMailer(f.app.services, smtpTransport(smtp.url), quiet, { pollIntervalMs: 20 });
  running.start();
  t.teardown(() => running.stop());
  await until(() => smtp.connections() > 0);
  const whileHeld = await forgotFrom(f.app, memberOf('manager'), '203.0.113.10');
  t.equal(whileHeld.status, 200, 'answered while the SMTP server holds a message');
  t.equal(smtp.received.length, 0, 'nothing has been delivered yet');
  smtp.release();
  await until(() => smtp.received.length >= 2);
  t.same(smtp.received.map((m) => m.to[0]).sort(), [memberOf('manager'), memberOf('viewer')], 'members only');
  t.ok(
    smtp.received.every((m) => resetLink(m.text)),
    'each with a link',
  );
});

t.test('forgot is limited per email and per address, alike for members and strangers', async (t) => {
  const f = await consoleFixture(t, { config: { smtpUrl: 'smtp://127.0.0.1:9', trustProxy: ['loopback'] } });
  const member: number[] = [];
  const nobody: number[] = [];
  for (let i = 0; i < 5; i += 1) {
    member.push((await forgotFrom(f.app, memberOf('viewer'), `198.51.100.${i + 1}`)).status);
    nobody.push((await forgotFrom(f.app, 'nobody@northstar.example', `198.51.100.${i + 1}`)).status);
  }
  t.same(member, [200, 200, 200, 429, 429], 'three per email, from any address');
  t.same(nobody, member, 'an unknown email alike');
  const fromOne: number[] = [];
  for (let i = 0; i < 12; i += 1) fromOne.push((await forgotFrom(f.app, `person${i}@elsewhere.example`)).status);
  t.same(fromOne, [...Array(10).fill(200), 429, 429], 'ten per address over any emails');
  const queued = await f.app.pool.query('SELECT count(*)::int AS n FROM staff_reset_requests');
  t.equal(queued.rows[0].n, 3 + 3 + 10, 'only what was allowed was queued');
});

t.test('one live reset link per account; any new password ends every link still out', async (t) => {
  const smtp = await TestSmtpServer.start();
  t.teardown(() => smtp.stop());
  const clock = new TestClock();
  const f = await consoleFixture(t, { config: { smtpUrl: smtp.url }, clock });
  f.app.services.rateLimits = new MemoryRateLimitStore(() => clock.now().getTime());
  const mailer = new ResetMailer(f.app.services, smtpTransport(smtp.url), quiet);
  const linkFor = async (email: string) => {
    // Ten minutes apart: three requests per email, then one every ten minutes.
    clock.advance(10 * 60_000);
    t.equal((await f.client().post('/console/forgot', { email })).status, 200);
    await mailer.sendDue();
    return resetLink(smtp.received.filter((m) => m.to.includes(email)).at(-1)!.mail.text ?? '')!;
  };
  const first = await linkFor(memberOf('viewer'));
  const second = await linkFor(memberOf('viewer'));
  const c = f.client();
  t.equal((await c.get(first)).status, 410, 'a newer link ends the older one');
  t.equal((await c.get(second)).status, 200);
  const live = await f.app.pool.query(
    "SELECT count(*)::int AS n FROM staff_one_time_tokens WHERE purpose = 'password_reset' AND used_at IS NULL",
  );
  t.equal(live.rows[0].n, 1, 'one live reset token');

  // A change on the account page ends it.
  const viewer = f.client();
  await viewer.signIn(memberOf('viewer'));
  const changed = await viewer.post('/console/account/password', {
    current: PASSWORD,
    password: NEW_PASSWORD,
    confirm: NEW_PASSWORD,
    revoke_tokens: 'on',
  });
  t.equal(changed.status, 303);
  t.equal((await c.get(second)).status, 410, 'a password change ends the link');

  // So does any other path that sets a password (here the accounts module directly, as a CLI would).
  const third = await linkFor(memberOf('viewer'));
  const account = await f.app.pool.query<{ id: string }>('SELECT id FROM staff_accounts WHERE email = $1', [
    memberOf('viewer'),
  ]);
  await setPassword(f.app.pool, account.rows[0]!.id, PASSWORD, clock.now());
  t.equal((await c.get(third)).status, 410, 'setting the password anywhere ends it');

  // And using a link ends the others (there are none left live), signing in with the new password.
  const fourth = await linkFor(memberOf('viewer'));
  t.equal((await c.post(fourth, { password: NEW_PASSWORD, confirm: NEW_PASSWORD })).status, 303);
  t.equal((await c.get(fourth)).status, 410, 'used once');
});

t.test('personal access tokens end with the access they stand for', async (t) => {
  const smtp = await TestSmtpServer.start();
  t.teardown(() => smtp.stop());
  const f = await consoleFixture(t, { config: { smtpUrl: smtp.url } });
  const mailer = new ResetMailer(f.app.services, smtpTransport(smtp.url), quiet);
  const email = memberOf('admin');
  const works = async (token: string) =>
    (
      await f.app.request(`/admin/v1/workspaces/${f.ws.workspace.slug}/webhooks`, {
        headers: { authorization: `Bearer ${token}` },
      })
    ).status === 200;
  const newToken = async (c: ReturnType<typeof f.client>) => {
    const page = await c.post('/console/account/tokens', {
      workspace: f.ws.workspace.slug,
      name: 'cli',
      days: '30',
      password: PASSWORD,
    });
    return (await shownOnce(c, page))!;
  };
  const c = f.client();
  await c.signIn(email);
  const account = await c.get('/console/account');
  t.match(account.text, /revokes every personal access token you made/, 'sign out everywhere says so');
  t.match(account.text, /name="revoke_tokens"\s+value="on"\s+checked/, 'the change form offers it, ticked');

  // Sign out everywhere.
  const one = await newToken(c);
  t.ok(await works(one));
  t.equal((await c.post('/console/account/sign-out-everywhere', {})).status, 303);
  t.notOk(await works(one), 'signing out everywhere revoked it');

  // A password change, unticked: the token stays; ticked (the default): it goes.
  await c.signIn(email);
  const two = await newToken(c);
  t.equal(
    (await c.post('/console/account/password', { current: PASSWORD, password: NEW_PASSWORD, confirm: NEW_PASSWORD }))
      .status,
    303,
  );
  t.ok(await works(two), 'unticked: the token still works');
  const done = await c.post('/console/account/password', {
    current: NEW_PASSWORD,
    password: PASSWORD,
    confirm: PASSWORD,
    revoke_tokens: 'on',
  });
  t.equal(done.status, 303);
  t.match((await c.get(done.headers.get('location')!)).text, /every personal access token of yours was revoked/);
  t.notOk(await works(two), 'ticked: revoked');

  // A reset.
  const three = await newToken(c);
  t.ok(await works(three));
  await f.client().post('/console/forgot', { email });
  await mailer.sendDue();
  const link = resetLink(smtp.received.filter((m) => m.to.includes(email)).at(-1)!.mail.text ?? '')!;
  const form = await f.client().get(link);
  t.match(form.text, /revokes every personal access token you made/, 'the reset form says so');
  t.equal((await f.client().post(link, { password: NEW_PASSWORD, confirm: NEW_PASSWORD })).status, 303);
  t.notOk(await works(three), 'a reset revoked it');
  t.equal((await c.get('/console')).status, 303, 'and ended the session');
});
