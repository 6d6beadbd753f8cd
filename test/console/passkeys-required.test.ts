import t from 'tap';
import { findAccountByEmail } from '../../src/identity/accounts.js';
import { savePasskey } from '../../src/identity/passkeys.js';
import { applyDefinition, findWorkspace } from '../../src/workspaces/repository.js';
import { everyRole, memberOf } from '../identity/support.js';
import { demoDefinition } from '../support/app.js';
import { changeMembers, membershipsOf } from '../../src/identity/members.js';
import { seedWorkspace } from '../support/app.js';
import { consoleFixture, PASSWORD, shownOnce } from './support.js';

async function requiringOwnersAndAdmins(t: Parameters<typeof consoleFixture>[0]) {
  const f = await consoleFixture(t);
  const members = `/console/w/${f.ws.workspace.slug}/members`;
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  // The owner's session used a passkey (the Chromium suite does it with a real ceremony): the requirement is theirs too.
  await f.app.pool.query(
    'UPDATE staff_sessions s SET passkey_at = now() FROM staff_accounts a WHERE a.id = s.account_id AND a.email = $1',
    [memberOf('owner')],
  );
  const tokenBefore = await f.ws.tokenFor(memberOf('admin'));
  const saved = await owner.post(`${members}/passkeys-required`, { passkeys_required: 'owners_and_admins' });
  t.equal(saved.status, 303);
  t.match((await owner.get(saved.headers.get('location')!)).text, 'The passkey requirement is saved');
  return { ...f, members, owner, tokenBefore };
}

/** A passkey row for the account, as a registration stores it (the browser ceremony is in the Chromium suite). */
async function givePasskey(f: Awaited<ReturnType<typeof consoleFixture>>, email: string) {
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
}

t.test('an owner requires passkeys: an admin signed in with a password is led to register one first', async (t) => {
  const f = await requiringOwnersAndAdmins(t);
  t.equal((await findWorkspace(f.app.pool, f.ws.workspace.slug))!.settings.passkeys_required, 'owners_and_admins');
  const admin = f.client();
  t.equal((await admin.signIn(memberOf('admin'))).status, 303);
  const home = await admin.get('/console');
  t.equal(home.status, 303);
  t.equal(home.headers.get('location'), '/console/passkeys/required');
  const required = await admin.get('/console/passkeys/required');
  t.match(required.text, 'Register a passkey');
  t.match(required.text, f.ws.workspace.name);
  const page = await admin.get(f.members);
  t.equal(page.status, 303, 'no page of the workspace before');
  t.equal(page.headers.get('location'), '/console/passkeys/required');
  const token = await admin.post('/console/account/tokens', { workspace: f.ws.workspace.slug, name: 'x', days: '1' });
  t.equal(token.status, 403, 'no token from a password alone');
  t.match(token.text, 'requires a passkey');

  const counsellor = f.client();
  await counsellor.signIn(memberOf('counsellor'));
  t.equal((await counsellor.get(f.members)).status, 200, 'a counsellor is not asked');
});

t.test('tokens made with a password alone stop working while the workspace requires a passkey', async (t) => {
  const f = await requiringOwnersAndAdmins(t);
  const call = (token: string) =>
    f.app.request(`/admin/v1/workspaces/${f.ws.workspace.slug}/webhooks`, {
      headers: { authorization: `Bearer ${token}` },
    });
  const refused = await call(f.tokenBefore);
  t.equal(refused.status, 403);
  t.match(await refused.text(), /requires a passkey/);
  await givePasskey(f, memberOf('admin'));
  t.equal((await call(f.tokenBefore)).status, 403, 'a passkey on the account does not make the old token good');

  // A token the admin makes in a session that used a passkey works, while the account holds one.
  const admin = f.client();
  await admin.signIn(memberOf('admin'));
  await f.app.pool.query(
    'UPDATE staff_sessions s SET passkey_at = now() FROM staff_accounts a WHERE a.id = s.account_id AND a.email = $1',
    [memberOf('admin')],
  );
  const made = await admin.post('/console/account/tokens', { workspace: f.ws.workspace.slug, name: 'pk', days: '1' });
  t.equal(made.status, 303);
  const token = (await shownOnce(admin, made))!;
  t.equal((await call(token)).status, 200, 'a token made in a passkey session works');
  await f.app.pool.query(
    'DELETE FROM staff_passkeys p USING staff_accounts a WHERE a.id = p.account_id AND a.email = $1',
    [memberOf('admin')],
  );
  t.equal((await call(token)).status, 403, 'and stops once the account holds no passkey');
});

t.test(
  'a session that owes a passkey cannot change the account: password, sign-out everywhere, invitations',
  async (t) => {
    const f = await requiringOwnersAndAdmins(t);
    await givePasskey(f, memberOf('admin'));
    const admin = f.client();
    await admin.signIn(memberOf('admin'));
    const account = await admin.get('/console/account');
    t.equal(account.status, 303, 'the account page waits for the passkey');
    t.equal(account.headers.get('location'), '/console/passkeys/required');
    const changed = await admin.post('/console/account/password', {
      current: PASSWORD,
      password: 'violin tundra harbour pebble',
      confirm: 'violin tundra harbour pebble',
    });
    t.equal(changed.status, 403, 'no password change');
    t.equal((await f.client().signIn(memberOf('admin'))).status, 303, 'the old password still signs in');
    const sessionsBefore = await f.app.pool.query(
      'SELECT count(*)::int AS n FROM staff_sessions s JOIN staff_accounts a ON a.id = s.account_id WHERE a.email = $1',
      [memberOf('admin')],
    );
    const everywhere = await admin.post('/console/account/sign-out-everywhere', {});
    t.equal(everywhere.status, 403, 'no sign-out everywhere');
    const sessionsAfter = await f.app.pool.query(
      'SELECT count(*)::int AS n FROM staff_sessions s JOIN staff_accounts a ON a.id = s.account_id WHERE a.email = $1',
      [memberOf('admin')],
    );
    t.equal(sessionsAfter.rows[0].n, sessionsBefore.rows[0].n, 'every session goes on');

    // An invitation to another workspace waits for the passkey too, from the list and from its link.
    const other = await seedWorkspace(f.app, {
      users: [{ name: 'Other Owner', email: 'other.owner@elsewhere.example', role: 'owner', branch: 'DEL' }],
    });
    await changeMembers(
      f.app.pool,
      other.workspace.id,
      { type: 'invite', email: memberOf('admin'), name: 'Admin', role: 'viewer', pending: 'sign_in' },
      f.app.services.now(),
    );
    const accepted = await admin.post(`/console/invitations/${other.workspace.slug}/accept`, {});
    t.equal(accepted.status, 403, 'no acceptance');
    t.same(await membershipsOf(f.app.pool, memberOf('admin')).then((m) => m.length), 1, 'still one workspace');
    t.equal((await admin.post('/console/sign-out', {})).status, 303, 'signing out stays open');
  },
);

t.test('a password session of an account with a passkey cannot swap passkeys; it confirms with one', async (t) => {
  const f = await requiringOwnersAndAdmins(t);
  await givePasskey(f, memberOf('admin'));
  const admin = f.client();
  await admin.signIn(memberOf('admin'));
  const required = await admin.get('/console/passkeys/required');
  t.match(required.text, 'Confirm with a passkey');
  t.notMatch(required.text, 'id="add-passkey"');
  const csrf = /data-csrf="([^"]+)"/.exec(required.text)![1]!;
  const add = await fetch(`${f.app.baseUrl}/console/passkeys/register/options`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie: admin.cookie!, origin: f.app.baseUrl },
    body: JSON.stringify({ _csrf: csrf }),
  });
  t.equal(add.status, 403, 'no second passkey from a password alone');
  const account = (await findAccountByEmail(f.app.pool, memberOf('admin')))!;
  const remove = await admin.post(`/console/passkeys/cred-${account.id}/remove`, {});
  t.equal(remove.status, 403, 'nor removing one');
});

t.test('the recovery: an owner resets a member’s passkeys after a confirmation step', async (t) => {
  const f = await requiringOwnersAndAdmins(t);
  await givePasskey(f, memberOf('admin'));
  const admin = f.ws.workspace.settings.users.find((u) => u.email === memberOf('admin'))!;
  const confirm = await f.owner.get(`${f.members}/${admin.id}/reset-passkeys`);
  t.match(confirm.text, 'Every passkey of');
  const done = await f.owner.post(`${f.members}/${admin.id}/reset-passkeys`, {});
  t.equal(done.status, 303);
  t.match((await f.owner.get(done.headers.get('location')!)).text, 'passkeys are removed');
  const left = await f.app.pool.query(
    'SELECT 1 FROM staff_passkeys p JOIN staff_accounts a ON a.id = p.account_id WHERE a.email = $1',
    [memberOf('admin')],
  );
  t.equal(left.rows.length, 0);
  const again = f.client();
  await again.signIn(memberOf('admin'));
  t.match((await again.get('/console/passkeys/required')).text, 'Register a passkey', 'they register a new one');
});

t.test('the definition file sets the requirement; a file without it keeps it', async (t) => {
  const f = await consoleFixture(t);
  const file = demoDefinition({ slug: f.ws.workspace.slug, ...everyRole(), passkeys_required: 'everyone' });
  const { workspace } = await applyDefinition(f.app.pool, file, f.app.services.secretBox);
  t.equal(workspace.settings.passkeys_required, 'everyone');
  const { passkeys_required: _left, ...without } = file;
  const kept = await applyDefinition(f.app.pool, without, f.app.services.secretBox);
  t.equal(kept.workspace.settings.passkeys_required, 'everyone');
  const viewer = f.client();
  await viewer.signIn(memberOf('viewer'));
  t.equal((await viewer.get('/console')).headers.get('location'), '/console/passkeys/required', 'every member');
});
