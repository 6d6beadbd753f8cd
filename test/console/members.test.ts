import t from 'tap';
import { ROLES } from '../../src/identity/permissions.js';
import { memberOf } from '../identity/support.js';
import { consoleFixture } from './support.js';

t.test('Members offers only what the role may do', async (t) => {
  const f = await consoleFixture(t);
  const members = `/console/w/${f.ws.workspace.slug}/members`;
  for (const role of ROLES) {
    const c = f.client();
    await c.signIn(memberOf(role));
    const page = (await c.get(members)).text;
    const manages = role === 'owner' || role === 'admin';
    t.equal(/Change role/.test(page), manages, `${role}: Change role ${manages ? 'offered' : 'not offered'}`);
    t.equal(/>Deactivate</.test(page), manages, `${role}: Deactivate`);
    t.equal(/Invite a member/.test(page), manages, `${role}: the invitation form`);
    t.equal(/Passkeys at sign-in/.test(page), role === 'owner', `${role}: the passkey requirement`);
    if (role === 'admin') {
      const owner = f.ws.workspace.settings.users.find((u) => u.role === 'owner')!;
      t.notMatch(page, `${members}/${owner.id}/`, 'an admin is offered nothing on an owner');
      t.notMatch(page, /<option[^>]*>owner<\/option>/, 'nor the owner role');
    }
  }
});

t.test('deactivate asks first, says what happened, and Reactivate brings the member back', async (t) => {
  const f = await consoleFixture(t);
  const members = `/console/w/${f.ws.workspace.slug}/members`;
  const admin = f.client();
  await admin.signIn(memberOf('admin'));
  const counsellor = f.client();
  await counsellor.signIn(memberOf('counsellor'));
  const target = f.ws.workspace.settings.users.find((u) => u.email === memberOf('counsellor'))!;

  const list = await admin.get(members);
  t.match(list.text, `href="${members}/${target.id}/deactivate"`, 'a link to the confirmation step, not a button');
  const confirm = await admin.get(`${members}/${target.id}/deactivate`);
  t.equal(confirm.status, 200);
  t.match(confirm.text, 'will be signed out at once');
  t.match(confirm.text, 'Cancel, change nothing');
  t.equal((await counsellor.get(`/console/w/${f.ws.workspace.slug}/members`)).status, 200, 'nothing done yet');

  const done = await admin.post(`${members}/${target.id}/deactivate`, {});
  t.equal(done.status, 303);
  const after = await admin.get(done.headers.get('location')!);
  t.match(after.text, 'The counsellor is deactivated: their sessions ended');
  t.match(after.text, new RegExp(`<td>${memberOf('counsellor')}</td>\\s*<td>counsellor</td>\\s*<td>deactivated</td>`));
  t.match(after.text, `${members}/${target.id}/reactivate`, 'Reactivate offered');
  t.equal((await counsellor.get(members)).status, 401, 'their session ended');

  const back = await admin.post(`${members}/${target.id}/reactivate`, {});
  t.equal(back.status, 303);
  t.match((await admin.get(back.headers.get('location')!)).text, 'The counsellor is active again');
  const again = f.client();
  t.equal((await again.signIn(memberOf('counsellor'))).status, 303);
  t.equal((await again.get(members)).status, 200, 'a member again');
});

t.test('a member list shows invitees as invited, the former as deactivated', async (t) => {
  const f = await consoleFixture(t);
  const members = `/console/w/${f.ws.workspace.slug}/members`;
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  await owner.post(`${members}/invite`, { name: 'Ravi', email: 'ravi@northstar.example', role: 'manager' });
  const page = (await owner.get(members)).text;
  t.match(page, /<td>ravi@northstar\.example<\/td>\s*<td>manager<\/td>\s*<td>invited<\/td>/);
  t.match(page, /<td>former@northstar\.example<\/td>\s*<td>admin<\/td>\s*<td>deactivated<\/td>/);
  t.match(page, new RegExp(`<td>${memberOf('viewer')}</td>\\s*<td>viewer</td>\\s*<td>active</td>`));
});

t.test('malformed member requests are refused as pages, never a 500', async (t) => {
  const f = await consoleFixture(t);
  const members = `/console/w/${f.ws.workspace.slug}/members`;
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  const nul = await owner.post(`${members}/invite`, {
    name: 'A\u0000B',
    email: 'nul@northstar.example',
    role: 'viewer',
  });
  t.equal(nul.status, 400);
  t.equal(
    (await owner.post(`${members}/not-a-uuid/role`, { role: 'viewer' })).status,
    404,
    'a malformed id names no member',
  );
  t.equal(
    (await owner.post(`${members}/invite`, { name: 'X', email: 'x@northstar.example', role: 'king' })).status,
    400,
  );
  t.equal((await owner.get(`${members}?done=hacked`)).status, 400);
});
