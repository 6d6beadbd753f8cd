import t, { type Test } from 'tap';
import { ensureAccount, findAccountByEmail, setPassword } from '../../src/identity/accounts.js';
import { savePasskey } from '../../src/identity/passkeys.js';
import { memberOf } from '../identity/support.js';
import { seedWorkspace } from '../support/app.js';
import { runCli } from '../support/cli.js';
import { TestSmtpServer } from '../support/smtp.js';
import { consoleFixture, PASSWORD } from './support.js';

// An account spans workspaces: these are the attacks of one workspace's owner on an account that belongs to another,
// found from the attacker's side (a member named by a definition file, and a passkey reset), and the ways that stay
// open to the account's own workspace and to the operator.

const VIKRAM = 'vikram@northstar.example';
const EVE = 'eve@eves-visas.example';
const VIKRAM_PASSWORD = 'saffron harbour violin tundra';
const ATTACKER_PASSWORD = 'pebble copper meadow lantern';

const linkIn = (text: string) => /https?:\/\/[^\s<"]+\/console\/invitation\/[A-Za-z0-9_-]+/.exec(text)?.[0];

/**
 * Workspace A of every role plus Vikram, named by its definition file and never signed in (an account without
 * credentials once anything looks him up); workspace E of Eve, an owner with a password.
 */
async function fixture(t: Test, smtpUrl?: string) {
  const f = await consoleFixture(t, { config: smtpUrl ? { smtpUrl } : {} });
  const withVikram = [
    ...f.ws.workspace.settings.users.map((u) => ({
      name: u.name,
      email: u.email,
      role: u.role,
      branch: 'DEL',
      active: u.active,
    })),
    { name: 'Vikram', email: VIKRAM, role: 'counsellor' as const, branch: 'DEL' },
  ];
  const a = await seedWorkspace(f.app, { slug: f.ws.workspace.slug, name: f.ws.workspace.name, users: withVikram });
  const e = await seedWorkspace(f.app, {
    slug: 'eves-visas',
    name: 'Eve’s Visas',
    users: [{ name: 'Eve', email: EVE, role: 'owner', branch: 'DEL' }],
  });
  const eveAccount = await ensureAccount(f.app.pool, { email: EVE, name: 'Eve' }, f.app.services.now());
  await setPassword(f.app.pool, eveAccount.id, PASSWORD, f.app.services.now());
  const eve = f.client();
  t.equal((await eve.signIn(EVE)).status, 303, 'Eve signs in');
  const owner = f.client();
  t.equal((await owner.signIn(memberOf('owner'))).status, 303, 'A’s owner signs in');
  return { ...f, a: a.workspace, e: e.workspace, eve, owner };
}

const vikramIn = (workspace: { settings: { users: { email: string; id: string }[] } }) =>
  workspace.settings.users.find((u) => u.email === VIKRAM)!;

t.test('another workspace’s invitation never hands over the link of a member who has not signed in', async (t) => {
  const f = await fixture(t);
  const invited = await f.eve.post('/console/w/eves-visas/members/invite', {
    name: 'Vikram',
    email: VIKRAM,
    role: 'owner',
  });
  t.equal(invited.status, 201);
  t.notOk(linkIn(invited.text), 'no link on Eve’s page');
  t.match(invited.text, 'belongs to another workspace and has not set up their account yet');
  const account = await findAccountByEmail(f.app.pool, VIKRAM);
  t.equal(account?.password_hash ?? null, null, 'Vikram still has no password');
  // Nothing Eve can do signs in as Vikram, so A's leads stay out of her reach.
  t.equal((await f.client().signIn(VIKRAM, ATTACKER_PASSWORD)).status, 401);
});

t.test('a mailed link of another workspace cannot set up the account; his own workspace’s link can', async (t) => {
  const smtp = await TestSmtpServer.start();
  t.teardown(() => smtp.stop());
  const f = await fixture(t, smtp.url);
  t.equal(
    (await f.eve.post('/console/w/eves-visas/members/invite', { name: 'Vikram', email: VIKRAM, role: 'viewer' }))
      .status,
    303,
  );
  const evesLink = linkIn(smtp.received.find((m) => m.to.includes(VIKRAM))?.mail.text ?? '');
  t.ok(evesLink, 'Eve’s invitation is mailed to Vikram');
  const vikram = f.client();
  const opened = await vikram.get(new URL(evesLink!).pathname);
  t.equal(opened.status, 409);
  t.match(opened.text, 'belongs to another workspace too and is not set up yet');
  const posted = await vikram.post(
    new URL(evesLink!).pathname,
    { password: VIKRAM_PASSWORD, confirm: VIKRAM_PASSWORD },
    { csrf: false },
  );
  t.equal(posted.status, 409, 'the link sets no password');
  t.equal((await findAccountByEmail(f.app.pool, VIKRAM))?.password_hash ?? null, null);

  // A's owner sends his first link from the Members page: mailed to him.
  const sent = await f.owner.post(`/console/w/${f.a.slug}/members/${vikramIn(f.a).id}/first-link`, {});
  t.equal(sent.status, 303);
  t.match((await f.owner.get(sent.headers.get('location')!)).text, 'first sign-in link is on its way');
  const own = smtp.received.filter((m) => m.to.includes(VIKRAM)).at(-1)!;
  const ownLink = linkIn(own.mail.text ?? '')!;
  t.not(ownLink, evesLink, 'a link of A’s own');
  const set = await vikram.post(
    new URL(ownLink).pathname,
    { password: VIKRAM_PASSWORD, confirm: VIKRAM_PASSWORD },
    { csrf: false },
  );
  t.equal(set.status, 303, 'his password is set');
  t.equal((await vikram.get(`/console/w/${f.a.slug}/leads`)).status, 200, 'he reads A');
  // Now that he can sign in, Eve's link asks him to sign in and answer; accepting joins E beside A.
  const again = await vikram.get(new URL(evesLink!).pathname);
  t.equal(again.status, 200);
  const accepted = await vikram.post(`${new URL(evesLink!).pathname}/accept`, {});
  t.equal(accepted.status, 303);
  t.equal((await vikram.get('/console/w/eves-visas/leads')).status, 200, 'and E, by his own choice');
});

t.test('no SMTP: his own workspace shows his first link; the invite form sends it instead of a 409', async (t) => {
  const f = await fixture(t);
  const members = `/console/w/${f.a.slug}/members`;
  const list = await f.owner.get(members);
  t.match(list.text, 'not signed in yet');
  t.match(list.text, 'Send their first sign-in link');
  const again = await f.owner.post(`${members}/invite`, { name: 'Vikram', email: VIKRAM, role: 'counsellor' });
  t.equal(again.status, 201, 'inviting him again shows his link');
  const link = linkIn(again.text);
  t.ok(link);
  const vikram = f.client();
  const page = await vikram.get(new URL(link!).pathname);
  t.match(page.text, 'You are a member of');
  const set = await vikram.post(
    new URL(link!).pathname,
    { password: VIKRAM_PASSWORD, confirm: VIKRAM_PASSWORD },
    { csrf: false },
  );
  t.equal(set.status, 303);
  t.equal((await vikram.get(`${members}`)).status, 200, 'he reads A (a counsellor sees the members list)');
  t.notMatch((await f.owner.get(members)).text, 'Send their first sign-in link', 'nothing more to send');
  const refused = await f.owner.post(`${members}/${vikramIn(f.a).id}/first-link`, {});
  t.equal(refused.status, 409, 'no first link for an account that signs in');
});

async function givePasskey(f: Awaited<ReturnType<typeof fixture>>, email: string) {
  const account = (await findAccountByEmail(f.app.pool, email))!;
  await savePasskey(f.app.pool, {
    credentialId: `cred-${account.id}`,
    accountId: account.id,
    publicKey: new Uint8Array([1, 2, 3]),
    counter: 0,
    transports: [],
    name: 'A passkey',
    now: f.app.services.now(),
  });
  return account;
}

const passkeysOf = async (f: Awaited<ReturnType<typeof fixture>>, accountId: string) =>
  (await f.app.pool.query('SELECT 1 FROM staff_passkeys WHERE account_id = $1', [accountId])).rows.length;
const sessionsOf = async (f: Awaited<ReturnType<typeof fixture>>, accountId: string) =>
  (await f.app.pool.query('SELECT 1 FROM staff_sessions WHERE account_id = $1', [accountId])).rows.length;

t.test('no workspace removes the passkeys of an account that belongs to another; the operator can', async (t) => {
  const f = await fixture(t);
  const account = await givePasskey(f, memberOf('owner'));
  t.equal(await sessionsOf(f, account.id), 1);
  // Eve invites A's owner (never accepted), then tries the reset.
  t.equal(
    (
      await f.eve.post('/console/w/eves-visas/members/invite', {
        name: 'A owner',
        email: memberOf('owner'),
        role: 'viewer',
      })
    ).status,
    303,
  );
  const e = (await f.app.pool.query('SELECT settings FROM workspaces WHERE slug = $1', ['eves-visas'])).rows[0];
  const invitee = (e.settings as { users: { email: string; id: string }[] }).users.find(
    (u) => u.email === memberOf('owner'),
  )!;
  const asked = await f.eve.get(`/console/w/eves-visas/members/${invitee.id}/reset-passkeys`);
  t.equal(asked.status, 409, 'not even asked');
  t.match(asked.text, 'is not a member here yet');
  const reset = await f.eve.post(`/console/w/eves-visas/members/${invitee.id}/reset-passkeys`, {});
  t.equal(reset.status, 409);
  t.equal(await passkeysOf(f, account.id), 1, 'her passkey stays');
  t.equal(await sessionsOf(f, account.id), 1, 'her session goes on');

  // Accepted in E too, she is a member of both: E's owner is told the operator resets them.
  await f.owner.post('/console/invitations/eves-visas/accept', {});
  const members = await f.eve.get('/console/w/eves-visas/members');
  t.match(members.text, 'Passkeys shared with another workspace');
  const refused = await f.eve.post(`/console/w/eves-visas/members/${invitee.id}/reset-passkeys`, {});
  t.equal(refused.status, 409);
  t.match(refused.text, 'ask the service’s operator');
  t.equal(await passkeysOf(f, account.id), 1, 'still there');

  const cli = await runCli(f.app.services.config.databaseUrl!, ['account', 'reset-passkeys', memberOf('owner')]);
  t.equal(cli.code, 0, cli.stderr);
  t.match(cli.stdout, 'Removed 1 passkey(s)');
  t.equal(await passkeysOf(f, account.id), 0, 'the operator removed it');
  t.equal(await sessionsOf(f, account.id), 0, 'and ended her sessions');
  const unknown = await runCli(f.app.services.config.databaseUrl!, ['account', 'reset-passkeys', 'nobody@x.example']);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, 'No staff account has the email nobody@x.example');
});
