import t from 'tap';
import { memberOf } from '../identity/support.js';
import { demoDefinition, TestClock } from '../support/app.js';
import { smtpTransport } from '../../src/shared/smtp.js';
import { ResetMailer } from '../../src/subscribers/reset-mailer.js';
import { TestSmtpServer } from '../support/smtp.js';
import { consoleFixture, PASSWORD } from './support.js';

t.test('a test secret key: shown once with no-store, works on /v1/leads, never shown again', async (t) => {
  const f = await consoleFixture(t);
  const c = f.client();
  await c.signIn(memberOf('admin'));
  const keys = `/console/w/${f.ws.workspace.slug}/keys`;
  const posted = await c.post(keys, { name: 'Integration test', type: 'secret', mode: 'test' });
  t.equal(posted.status, 303, 'the POST answers with a redirect: a reload re-posts nothing');
  const shownAt = posted.headers.get('location')!;
  t.match(shownAt, /^\/console\/once\/[0-9a-f-]{36}$/);
  const created = await c.get(shownAt);
  t.equal(created.status, 200);
  t.equal(created.headers.get('cache-control'), 'no-store');
  const value = /id="one-time-value" tabindex="-1">([^<]+)</.exec(created.text)?.[1];
  t.ok(value, 'the value is on the page the POST led to');
  t.match(created.text, /data-copy="one-time-value"/, 'with a copy button');
  t.match(created.text, /<script src="\/console\/assets\/one-time-secret.js"/, 'its script a file of the console');
  const again = await c.get(shownAt);
  t.equal(again.status, 410, 'a reload shows it no more');
  t.notMatch(again.text, value!);
  const other = f.client();
  await other.signIn(memberOf('admin'));
  const stolen = await c.post(keys, { name: 'Another', type: 'secret', mode: 'test' });
  const otherView = await other.get(stolen.headers.get('location')!);
  t.equal(otherView.status, 410, 'another session (the same member elsewhere) cannot open it');
  t.equal((await c.get(stolen.headers.get('location')!)).status, 200, 'and did not use it up');
  const lead = await f.app.request('/v1/leads', {
    method: 'POST',
    key: value!,
    json: { full_name: 'Console Tester', email: 'console.tester@example.org', consent: true },
  });
  t.equal(lead.status, 201, 'the key works');
  const list = await c.get(keys);
  t.equal(list.status, 200);
  t.notMatch(list.text, value!, 'the list shows no value');
  t.match(list.text, value!.slice(-4), 'only its last four');
  const keyId = /href="\/console\/w\/[^/]+\/keys\/([0-9a-f-]{36})">Integration test/.exec(list.text)?.[1];
  const sandbox = await c.get(`${keys}/${keyId}`);
  t.match(sandbox.text, 'Console Tester', "the test key's sandbox submissions");

  const live = await c.post(keys, { name: 'Live', type: 'secret', mode: 'live' });
  t.equal(live.status, 303, 'a live secret key right after sign-in (a recent sign-in)');
  const refusedOrigin = await c.post(keys, { name: 'Bad', type: 'public', mode: 'test', origins: 'not a url' });
  t.equal(refusedOrigin.status, 400);
  t.match(refusedOrigin.text, /class="error" id="f-origins-error"/, 'the refusal is next to its field');
});

t.test(
  'a recent sign-in: ten minutes on, a live secret key asks for the password again, next to its field',
  async (t) => {
    const clock = new TestClock(new Date());
    const f = await consoleFixture(t, { clock });
    const c = f.client();
    await c.signIn(memberOf('owner'));
    clock.advance(11 * 60_000);
    const keys = `/console/w/${f.ws.workspace.slug}/keys`;
    t.match((await c.get(keys)).text, /id="f-password"/, 'the form asks for it');
    const live = { name: 'Live', type: 'secret', mode: 'live' };
    const without = await c.post(keys, live);
    t.equal(without.status, 400);
    t.match(without.text, /id="f-password-error">Enter your password again/);
    const wrong = await c.post(keys, { ...live, password: 'not it at all' });
    t.match(wrong.text, /id="f-password-error">That is not your password/);
    t.equal((await c.post(keys, { ...live, password: PASSWORD })).status, 303);
    t.equal((await c.post(keys, live)).status, 303, 'then recent for ten minutes');
    t.equal((await c.post(keys, { name: 'Test', type: 'secret', mode: 'test' })).status, 303);
  },
);

t.test('a viewer sees members but may not create keys; a counsellor may not see keys', async (t) => {
  const f = await consoleFixture(t);
  const viewer = f.client();
  await viewer.signIn(memberOf('viewer'));
  t.equal((await viewer.get(`/console/w/${f.ws.workspace.slug}/members`)).status, 200);
  const refused = await viewer.post(`/console/w/${f.ws.workspace.slug}/keys`, {
    name: 'x',
    type: 'secret',
    mode: 'test',
  });
  t.equal(refused.status, 403);
  t.match(refused.text, /Your role \(viewer\) does not allow this/);
  const counsellor = f.client();
  await counsellor.signIn(memberOf('counsellor'));
  t.equal((await counsellor.get(`/console/w/${f.ws.workspace.slug}/keys`)).status, 403);
});

t.test('invitations and password resets through real SMTP: single-use and expiring', async (t) => {
  const smtp = await TestSmtpServer.start();
  t.teardown(() => smtp.stop());
  const clock = new TestClock();
  const f = await consoleFixture(t, { config: { smtpUrl: smtp.url }, clock });
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  const invited = await owner.post(`/console/w/${f.ws.workspace.slug}/members/invite`, {
    name: 'New Person',
    email: 'new.person@northstar.example',
    role: 'manager',
  });
  t.equal(invited.status, 303, 'mailed: back to the list, which says so');
  const mail = smtp.received.find((m) => m.to.includes('new.person@northstar.example'));
  const link = /https?:\/\/\S+\/console\/invitation\/[A-Za-z0-9_-]+/.exec(mail?.mail.text ?? '')?.[0];
  t.ok(link, 'the invitation link came by mail');
  const path = new URL(link!).pathname;
  const person = f.client();
  t.equal((await person.get(path)).status, 200);
  const tooShort = await person.post(path, { password: 'short', confirm: 'short' });
  t.equal(tooShort.status, 400);
  t.match(tooShort.text, /at least 12 characters/);
  const accepted = await person.post(path, { password: PASSWORD, confirm: PASSWORD });
  t.equal(accepted.status, 303);
  t.match((await person.get('/console')).text, f.ws.workspace.name, 'signed in as a member');
  t.equal((await f.client().post(path, { password: PASSWORD, confirm: PASSWORD })).status, 410, 'used once only');

  // Reset links leave through the reset outbox: its mailer sends what the form queued.
  const resetMailer = new ResetMailer(f.app.services, smtpTransport(smtp.url), { info() {}, warn() {}, error() {} });
  const forgot = f.client();
  t.equal((await forgot.post('/console/forgot', { email: memberOf('viewer') })).status, 200);
  t.equal((await forgot.post('/console/forgot', { email: 'nobody@northstar.example' })).status, 200, 'the same answer');
  await resetMailer.sendDue();
  const resets = smtp.received.filter((m) => m.to.includes(memberOf('viewer')));
  t.equal(resets.length, 1, 'mail only to a member');
  t.notOk(smtp.received.some((m) => m.to.includes('nobody@northstar.example')));
  const resetPath = new URL(/https?:\/\/\S+\/console\/reset\/[A-Za-z0-9_-]+/.exec(resets[0]!.mail.text ?? '')![0])
    .pathname;
  clock.advance(31 * 60_000);
  t.equal((await forgot.get(resetPath)).status, 410, 'expired after 30 minutes');
  await forgot.post('/console/forgot', { email: memberOf('viewer') });
  await resetMailer.sendDue();
  const second = smtp.received.filter((m) => m.to.includes(memberOf('viewer')))[1]!;
  const secondPath = new URL(/https?:\/\/\S+\/console\/reset\/[A-Za-z0-9_-]+/.exec(second.mail.text ?? '')![0])
    .pathname;
  const newPassword = 'another long enough password';
  t.equal((await forgot.post(secondPath, { password: newPassword, confirm: newPassword })).status, 303);
  t.equal((await f.client().signIn(memberOf('viewer'))).status, 401, 'the old password no longer works');
  t.equal((await f.client().signIn(memberOf('viewer'), newPassword)).status, 303);
});

t.test('the operator token creates a workspace and invites its first owner, and does nothing else', async (t) => {
  const f = await consoleFixture(t);
  const operator = 'operator-token-for-console-tests-0123456789';
  const body = demoDefinition({ slug: 'fresh-consultancy' });
  const create = (token: string) =>
    f.app.request('/admin/v1/workspaces', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      json: body,
    });
  t.equal((await create('wrong-operator-token-0123456789abcdef')).status, 401);
  const created = await create(operator);
  t.equal(created.status, 201);
  const answer = (await created.json()) as { owner: { email: string; invitation_url: string } };
  t.equal(answer.owner.email, 'asha@northstar.example');
  t.match(answer.owner.invitation_url, /\/console\/invitation\//);
  t.equal((await create(operator)).status, 409, 'only to create');
  const other = await f.app.request('/admin/v1/workspaces/fresh-consultancy/webhooks', {
    headers: { authorization: `Bearer ${operator}` },
  });
  t.equal(other.status, 401, 'the operator token opens no workspace operation');
});
