import t from 'tap';
import { SIGN_IN_REFUSED } from '../../src/identity/sign-in.js';
import { memberOf } from '../identity/support.js';
import { TestClock } from '../support/app.js';
import { ConsoleClient, consoleFixture, PASSWORD } from './support.js';

t.test('sign-in: one generic refusal, then a session cookie HttpOnly, SameSite=Lax, Path=/console', async (t) => {
  const f = await consoleFixture(t);
  const c = f.client();
  const wrong = await c.signIn(memberOf('owner'), 'not the password');
  t.equal(wrong.status, 401);
  t.match(wrong.text, SIGN_IN_REFUSED);
  const unknown = await c.signIn('nobody@northstar.example');
  t.equal(unknown.status, 401);
  t.match(unknown.text, SIGN_IN_REFUSED, 'the same words for an unknown email');
  const ok = await c.signIn(memberOf('owner'));
  t.equal(ok.status, 303);
  const cookie = ok.headers.get('set-cookie')!;
  t.match(cookie, /^vcrm_session=[A-Za-z0-9_-]{43};/);
  t.match(cookie, /HttpOnly/);
  t.match(cookie, /SameSite=Lax/);
  t.match(cookie, /Path=\/console/);
  t.notMatch(cookie, /Secure/, 'not Secure over plain HTTP');
  const home = await c.get('/console');
  t.equal(home.status, 200);
  t.match(home.text, f.ws.workspace.name);
  t.match(home.headers.get('content-security-policy'), /script-src 'self'/);
  const stored = await f.app.pool.query<{ id_hash: Buffer }>('SELECT id_hash FROM staff_sessions');
  t.equal(stored.rows[0]!.id_hash.length, 32, 'only a SHA-256 of the id is stored');
  t.notOk(stored.rows.some((r) => cookie.includes(r.id_hash.toString('base64url'))));
  const api = await f.app.request('/v1/leads', { key: f.ws.live });
  t.equal(api.headers.get('content-security-policy'), null, 'the API has no console CSP');
});

t.test('Secure whenever the request came over HTTPS', async (t) => {
  const f = await consoleFixture(t, { config: { trustProxy: ['loopback'] } });
  const response = await fetch(`${f.app.baseUrl}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-forwarded-proto': 'https',
      origin: f.app.baseUrl.replace('http:', 'https:'),
    },
    body: new URLSearchParams({ email: memberOf('owner'), password: PASSWORD }),
  });
  t.equal(response.status, 303);
  t.match(response.headers.get('set-cookie'), /Secure/);
});

t.test('session fixation: an id chosen before sign-in is never the one signed in', async (t) => {
  const f = await consoleFixture(t);
  const c = f.client();
  c.cookie = 'vcrm_session=attacker-chosen-value-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
  await c.signIn(memberOf('admin'));
  t.not(c.cookie, 'vcrm_session=attacker-chosen-value-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa');
  const attacker = new ConsoleClient(f.app);
  attacker.cookie = 'vcrm_session=attacker-chosen-value-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
  t.equal((await attacker.get('/console')).status, 303, 'the chosen id is not signed in');
  // A signed-in id is replaced at the next sign-in too.
  const before = c.cookie;
  await c.signIn(memberOf('admin'));
  const old = new ConsoleClient(f.app);
  old.cookie = before;
  t.equal((await old.get('/console')).status, 303, 'the previous id ended');
});

t.test('CSRF: a missing or wrong token, or another Origin, is refused and nothing is done', async (t) => {
  const f = await consoleFixture(t);
  const c = f.client();
  await c.signIn(memberOf('owner'));
  const missing = await c.post('/console/account/sign-out-everywhere', {}, { csrf: false });
  t.equal(missing.status, 403);
  t.match(missing.text, /nothing was done/);
  const wrong = await c.post('/console/account/sign-out-everywhere', { _csrf: 'x'.repeat(43) });
  t.equal(wrong.status, 403);
  const other = await c.post('/console/account/sign-out-everywhere', {}, { origin: 'https://evil.example' });
  t.equal(other.status, 403);
  const none = await c.post('/console/account/sign-out-everywhere', {}, { origin: null });
  t.equal(none.status, 403, 'no Origin and no Referer');
  t.equal((await c.get('/console')).status, 200, 'still signed in: nothing was done');
  const another = f.client();
  await another.signIn(memberOf('owner'));
  const foreign = await c.post('/console/account/sign-out-everywhere', { _csrf: await another.csrf() });
  t.equal(foreign.status, 403, "another session's token");
  const done = await c.post('/console/account/sign-out-everywhere', {});
  t.equal(done.status, 303);
  t.equal((await c.get('/console')).status, 303, 'signed out');
  t.equal((await another.get('/console')).status, 303, 'everywhere');
});

t.test('the sign-in throttle: after five failures for an account even the right password waits', async (t) => {
  const f = await consoleFixture(t);
  const c = f.client();
  for (let i = 0; i < 5; i += 1) t.equal((await c.signIn(memberOf('viewer'), `wrong ${i}`)).status, 401);
  const throttled = await c.signIn(memberOf('viewer'));
  t.equal(throttled.status, 429);
  t.match(throttled.text, /Too many failed sign-ins/);
  t.equal((await c.signIn(memberOf('manager'))).status, 303, 'another account from the same address still signs in');
});

t.test('the sign-in throttle per address: twenty failures over any accounts, then every sign-in waits', async (t) => {
  const f = await consoleFixture(t);
  const c = f.client();
  for (let i = 0; i < 20; i += 1)
    t.equal((await c.signIn(`nobody-${i % 5}@northstar.example`, `wrong ${i}`)).status, 401);
  t.equal((await c.signIn(memberOf('owner'))).status, 429, 'even an account with no failures of its own');
});

t.test('idle and absolute expiry', async (t) => {
  const clock = new TestClock();
  const f = await consoleFixture(t, { clock });
  const c = f.client();
  await c.signIn(memberOf('owner'));
  clock.advance(29 * 60_000);
  t.equal((await c.get('/console')).status, 200);
  clock.advance(31 * 60_000);
  t.equal((await c.get('/console')).status, 303, 'idle for 31 minutes: ended');
  await c.signIn(memberOf('owner'));
  for (let i = 0; i < 25; i += 1) {
    clock.advance(29 * 60_000);
    if ((await c.get('/console')).status !== 200) break;
  }
  t.equal((await c.get('/console')).status, 303, 'ended within 12 hours however busy');
});

t.test("deactivation and a role change end the member's sessions and tokens at once", async (t) => {
  const f = await consoleFixture(t);
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  const admin = f.client();
  await admin.signIn(memberOf('admin'));
  const adminToken = await f.ws.tokenFor(memberOf('admin'));
  const listWebhooks = () =>
    f.app.request(`/admin/v1/workspaces/${f.ws.workspace.slug}/webhooks`, {
      headers: { authorization: `Bearer ${adminToken}` },
    });
  t.equal((await listWebhooks()).status, 200);
  const adminUser = f.ws.workspace.settings.users.find((u) => u.email === memberOf('admin'))!;
  const changed = await owner.post(`/console/w/${f.ws.workspace.slug}/members/${adminUser.id}/role`, {
    role: 'viewer',
  });
  t.equal(changed.status, 303);
  t.equal((await admin.get('/console')).status, 303, 'the session ended');
  t.equal((await listWebhooks()).status, 401, 'the token was revoked');
  const counsellor = f.client();
  await counsellor.signIn(memberOf('counsellor'));
  const counsellorUser = f.ws.workspace.settings.users.find((u) => u.email === memberOf('counsellor'))!;
  t.equal(
    (await owner.post(`/console/w/${f.ws.workspace.slug}/members/${counsellorUser.id}/deactivate`, {})).status,
    303,
  );
  t.equal((await counsellor.get('/console')).status, 303, 'a deactivated member is signed out');
  await counsellor.signIn(memberOf('counsellor'));
  t.equal((await counsellor.get(`/console/w/${f.ws.workspace.slug}/members`)).status, 404, 'and sees no workspace');
});

t.test(
  'the account page shows its times in UTC, in the format of the workspace pages, whatever the zones',
  async (t) => {
    const clock = new TestClock(new Date('2026-11-27T10:00:00Z'));
    const f = await consoleFixture(t, { clock });
    const owner = f.client();
    await owner.signIn(memberOf('owner'));
    const settings = `/console/w/${f.ws.workspace.slug}/settings`;
    t.equal((await owner.post(settings, { time_zone: 'Asia/Kolkata' })).status, 303);
    const account = await owner.get('/console/account');
    t.match(
      account.text,
      /<time datetime="2026-11-27T10:00:00.000Z" title="2026-11-27 10:00 UTC"\s*>2026-11-27 10:00 UTC<\/time/,
      "this session's start, as a <time> holding the instant",
    );
    t.notMatch(account.text, /GMT\+5:30|IST/, "no workspace's zone");
  },
);
