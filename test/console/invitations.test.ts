import t, { type Test } from 'tap';
import { ensureAccount, setPassword } from '../../src/identity/accounts.js';
import { memberOf } from '../identity/support.js';
import { demoDefinition, seedWorkspace } from '../support/app.js';
import { TestSmtpServer } from '../support/smtp.js';
import { ConsoleClient, consoleFixture, PASSWORD } from './support.js';

const BOB = 'bob@bobs-visas.example';
const BOB_PASSWORD = 'bob keeps his own password';
const TAKEOVER = 'a password the inviter chose';

/** Workspace A of every role (the fixture) and workspace B whose owner Bob has an account with his own password. */
async function twoWorkspaces(t: Test, smtpUrl?: string) {
  const f = await consoleFixture(t, { config: smtpUrl ? { smtpUrl } : {} });
  const b = await seedWorkspace(f.app, {
    slug: 'bobs-visas',
    name: 'Bob’s Visas',
    users: [{ name: 'Bob', email: BOB, role: 'owner', branch: 'DEL' }],
  });
  const bob = await ensureAccount(f.app.pool, { email: BOB, name: 'Bob' }, f.app.services.now());
  await setPassword(f.app.pool, bob.id, BOB_PASSWORD, f.app.services.now());
  const admin = f.client();
  await admin.signIn(memberOf('admin'));
  return { ...f, b, admin, members: `/console/w/${f.ws.workspace.slug}/members` };
}

const linkIn = (text: string) => /https?:\/\/[^\s<"]+\/console\/invitation\/[A-Za-z0-9_-]+/.exec(text)?.[0];

async function signedIn(f: { client: () => ConsoleClient }, email: string, password = PASSWORD) {
  const c = f.client();
  t.equal((await c.signIn(email, password)).status, 303, `${email} signs in`);
  return c;
}

t.test('no SMTP: inviting an existing account shows no link, and Bob keeps his password and B', async (t) => {
  const f = await twoWorkspaces(t);
  const invited = await f.admin.post(`${f.members}/invite`, { name: 'Bob', email: BOB, role: 'viewer' });
  t.equal(invited.status, 303, 'back to the list: no link to show');
  const list = await f.admin.get(invited.headers.get('location')!);
  t.notOk(linkIn(list.text), 'no invitation link on the inviter’s page');
  t.match(list.text, /is invited as viewer/);
  t.match(list.text, new RegExp(`<td>${BOB}</td>\\s*<td>viewer</td>\\s*<td>invited</td>`), 'Bob shows as invited');
  // Bob's own password still opens his account and B; nobody set another.
  const bob = await signedIn(f, BOB, BOB_PASSWORD);
  t.equal((await f.client().signIn(BOB, TAKEOVER)).status, 401);
  t.equal((await bob.get(`/console/w/bobs-visas/members`)).status, 200, 'B as before');
  t.equal((await bob.get(f.members)).status, 404, 'A only after accepting');
});

t.test('SMTP: the mailed link of an existing account sets no password, and only Bob signed in accepts', async (t) => {
  const smtp = await TestSmtpServer.start();
  t.teardown(() => smtp.stop());
  const f = await twoWorkspaces(t, smtp.url);
  const invited = await f.admin.post(`${f.members}/invite`, { name: 'Bob', email: BOB, role: 'viewer' });
  t.equal(invited.status, 303);
  t.notOk(linkIn((await f.admin.get(invited.headers.get('location')!)).text), 'mailed only: not on the page');
  const link = linkIn(smtp.received.find((m) => m.to.includes(BOB))?.mail.text ?? '');
  t.ok(link, 'mailed to Bob');
  const path = new URL(link!).pathname;

  // Whoever holds the link cannot choose Bob's password with it.
  const holder = f.client();
  const page = await holder.get(path);
  t.equal(page.status, 200);
  t.notMatch(page.text, /name="password"/, 'no password form for an existing account');
  t.match(page.text, /Sign in with the email it was sent to/);
  const forced = await holder.post(path, { password: TAKEOVER, confirm: TAKEOVER });
  t.equal(forced.status, 409);
  t.equal(holder.cookie, undefined, 'not signed in');
  t.equal((await f.client().signIn(BOB, TAKEOVER)).status, 401, 'the password was not set');

  // Bound to Bob's email: the inviter, signed in, can neither see the question nor answer it.
  const other = await f.admin.get(path);
  t.equal(other.status, 403);
  t.match(other.text, /sent to another email/);
  t.equal((await f.admin.post(`${path}/accept`, {})).status, 403);

  const bob = await signedIn(f, BOB, BOB_PASSWORD);
  const question = await bob.get(path);
  t.match(question.text, `Join ${f.ws.workspace.name} as viewer?`);
  const accepted = await bob.post(`${path}/accept`, {});
  t.equal(accepted.status, 303);
  const home = await bob.get(accepted.headers.get('location')!);
  t.match(home.text, `You joined ${f.ws.workspace.name} as viewer.`);
  t.equal((await bob.get(f.members)).status, 200, 'a member of A now');
  t.equal((await bob.post(`${path}/accept`, {})).status, 410, 'the link is used up');
});

t.test('no SMTP: Bob finds the invitation on his workspace list after signing in, and declines one', async (t) => {
  const f = await twoWorkspaces(t);
  await f.admin.post(`${f.members}/invite`, { name: 'Bob', email: BOB, role: 'counsellor' });
  const bob = await signedIn(f, BOB, BOB_PASSWORD);
  const list = await bob.get('/console');
  t.match(list.text, `Join ${f.ws.workspace.name} as counsellor?`);
  const declined = await bob.post(`/console/invitations/${f.ws.workspace.slug}/decline`, {});
  t.equal(declined.status, 303);
  t.match((await bob.get(declined.headers.get('location')!)).text, 'You declined the invitation');
  t.equal((await bob.get(f.members)).status, 404);
  t.match(
    (await f.admin.get(f.members)).text,
    new RegExp(`<td>${BOB}</td>\\s*<td>counsellor</td>\\s*<td>invitation ended</td>`),
  );
  t.equal((await bob.get('/console/w/bobs-visas/members')).status, 200, 'declining ends no session of Bob’s');

  await f.admin.post(`${f.members}/invite`, { name: 'Bob', email: BOB, role: 'viewer' });
  const accepted = await bob.post(`/console/invitations/${f.ws.workspace.slug}/accept`, {});
  t.equal(accepted.status, 303);
  t.equal((await bob.get(f.members)).status, 200, 'invited again, accepted on the list');
});

t.test('a new account: the link sets its password (no SMTP: shown to the inviter), and joins', async (t) => {
  const f = await twoWorkspaces(t);
  const invited = await f.admin.post(`${f.members}/invite`, {
    name: 'Neha',
    email: 'neha@northstar.example',
    role: 'viewer',
  });
  t.equal(invited.status, 201);
  const link = linkIn(invited.text);
  t.ok(link, 'no mail server: the inviter hands the link over');
  const neha = f.client();
  const joined = await neha.post(new URL(link!).pathname, { password: PASSWORD, confirm: PASSWORD });
  t.equal(joined.status, 303);
  t.match((await neha.get(joined.headers.get('location')!)).text, `You joined ${f.ws.workspace.name} as viewer.`);
});

t.test('a link that set up a new account does not open another workspace’s invitation of it', async (t) => {
  const f = await twoWorkspaces(t);
  // Bob invites Carol to B first; she has no account yet, so B's invitation is accepted by its own link only.
  const bob = await signedIn(f, BOB, BOB_PASSWORD);
  const forB = await bob.post('/console/w/bobs-visas/members/invite', {
    name: 'Carol',
    email: 'carol@example.org',
    role: 'admin',
  });
  t.equal(forB.status, 201);
  // A's admin invites the same email and uses the link they were shown to set up the account themselves.
  const forA = await f.admin.post(`${f.members}/invite`, { name: 'Carol', email: 'carol@example.org', role: 'viewer' });
  const attacker = f.client();
  await attacker.post(new URL(linkIn(forA.text)!).pathname, { password: TAKEOVER, confirm: TAKEOVER });
  const list = await attacker.get('/console');
  t.match(list.text, 'Open the link in your invitation email to accept it.');
  t.equal((await attacker.post('/console/invitations/bobs-visas/accept', {})).status, 410);
  t.equal((await attacker.get('/console/w/bobs-visas/members')).status, 404, 'not a member of B');
});

t.test(
  'the operator names an existing account as owner: no link in the answer; Bob accepts after sign-in',
  async (t) => {
    const f = await twoWorkspaces(t);
    const created = await f.app.request('/admin/v1/workspaces', {
      method: 'POST',
      headers: { authorization: 'Bearer operator-token-for-console-tests-0123456789' },
      json: demoDefinition({
        slug: 'fresh-consultancy',
        users: [{ name: 'Bob', email: BOB, role: 'owner', branch: 'DEL' }],
      }),
    });
    t.equal(created.status, 201);
    const answer = (await created.json()) as { owner: { invitation_url: string | null; existing_account: boolean } };
    t.equal(answer.owner.invitation_url, null, 'nothing that could set Bob’s password');
    t.equal(answer.owner.existing_account, true);
    const bob = await signedIn(f, BOB, BOB_PASSWORD);
    t.equal((await bob.get('/console/w/fresh-consultancy/members')).status, 404, 'not before accepting');
    await bob.post('/console/invitations/fresh-consultancy/accept', {});
    t.equal((await bob.get('/console/w/fresh-consultancy/members')).status, 200);
  },
);

t.test('SMTP: the operator’s answer carries no link, even for a new owner', async (t) => {
  const smtp = await TestSmtpServer.start();
  t.teardown(() => smtp.stop());
  const f = await consoleFixture(t, { config: { smtpUrl: smtp.url } });
  const created = await f.app.request('/admin/v1/workspaces', {
    method: 'POST',
    headers: { authorization: 'Bearer operator-token-for-console-tests-0123456789' },
    json: demoDefinition({ slug: 'fresh-consultancy' }),
  });
  const answer = (await created.json()) as { owner: { invitation_url: string | null; mailed: boolean } };
  t.equal(answer.owner.mailed, true);
  t.equal(answer.owner.invitation_url, null);
  t.ok(linkIn(smtp.received[0]?.mail.text ?? ''), 'the owner has it by mail');
});
