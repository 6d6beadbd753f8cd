import t from 'tap';
import { IDENTITY_POLICY } from '../../src/identity/policy.js';
import { MemoryRateLimitStore } from '../../src/ratelimit/memory-store.js';
import { TestClock, type TestApp } from '../support/app.js';
import { memberOf } from '../identity/support.js';
import { SIGNED_OUT_FOR_PASSWORDS } from '../../src/console/context.js';
import { consoleFixture, PASSWORD } from './support.js';

/** A sign-in sent through a trusted proxy (TRUST_PROXY=loopback) for a client at `address`. */
async function signInFrom(app: TestApp, address: string, email: string, password: string): Promise<number> {
  const response = await fetch(`${app.baseUrl}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-forwarded-for': address,
      origin: app.baseUrl,
    },
    body: new URLSearchParams({ email, password }),
  });
  await response.text();
  return response.status;
}

/** The rate-limit buckets refill on the test's clock (the app's store reads the real one). */
function bucketsOn(app: TestApp, clock: TestClock): void {
  app.services.rateLimits = new MemoryRateLimitStore(() => clock.now().getTime());
}

/** Attempts from a known address (the session's door) before the limit; the fixture's clock refills them. */
const KNOWN = IDENTITY_POLICY.signInKnownAddress.capacity;
const wrongs = (status: number) => Array<number>(KNOWN).fill(status);

const OWNER_ADDRESS = '198.51.100.7';
const STRANGER = '203.0.113.66';

for (const [rate, intervalMs, attempts, ownerEveryMs] of [
  ['one a second', 1_000, 600, 120_000],
  ['one a minute', 60_000, 180, 600_000],
] as const)
  t.test(`a stranger spraying wrong passwords at ${rate} never locks the owner out of their own address`, async (t) => {
    const clock = new TestClock();
    const f = await consoleFixture(t, { clock, config: { trustProxy: ['loopback'] } });
    bucketsOn(f.app, clock);
    const owner = memberOf('owner');
    t.equal(await signInFrom(f.app, OWNER_ADDRESS, owner, PASSWORD), 303, 'the owner signs in once from home');
    const strangerAnswers: number[] = [];
    const ownerAnswers: number[] = [];
    for (let i = 0; i < attempts; i += 1) {
      clock.advance(intervalMs);
      strangerAnswers.push(await signInFrom(f.app, STRANGER, owner, `wrong guess ${i}`));
      // The owner comes back every few minutes, from their own address, with the right password.
      if ((i * intervalMs) % ownerEveryMs === 0)
        ownerAnswers.push(await signInFrom(f.app, OWNER_ADDRESS, owner, PASSWORD));
    }
    t.ok(
      ownerAnswers.every((s) => s === 303),
      `the owner signed in each time: ${ownerAnswers.join(' ')}`,
    );
    const checked = strangerAnswers.filter((s) => s === 401).length;
    t.same(new Set(strangerAnswers), new Set([401, 429]), 'the stranger meets the limit');
    // Five, then one every ten minutes from a new address: the window of the spray bounds the guesses checked.
    const elapsedMinutes = (attempts * intervalMs) / 60_000;
    t.ok(checked <= 5 + Math.ceil(elapsedMinutes / 10), `${checked} guesses checked in ${elapsedMinutes} minutes`);
    t.equal(strangerAnswers.slice(0, 5).join(), '401,401,401,401,401', 'the first five are checked');
    t.equal(strangerAnswers[5], 429, 'the sixth at once is not');
  });

t.test(
  'strangers from many addresses use up only the budget of addresses the owner never signed in from',
  async (t) => {
    const clock = new TestClock();
    const f = await consoleFixture(t, { clock, config: { trustProxy: ['loopback'] } });
    bucketsOn(f.app, clock);
    const owner = memberOf('owner');
    t.equal(await signInFrom(f.app, OWNER_ADDRESS, owner, PASSWORD), 303);
    // That first sign-in came through a new door and took one from the budget: ten minutes give it back.
    clock.advance(10 * 60_000);
    const answers: number[] = [];
    for (let i = 0; i < 30; i += 1) answers.push(await signInFrom(f.app, `203.0.113.${i + 1}`, owner, `wrong ${i}`));
    t.equal(
      answers.filter((s) => s === 401).length,
      10,
      `ten guesses checked over all new addresses: ${answers.join(' ')}`,
    );
    t.equal(await signInFrom(f.app, OWNER_ADDRESS, owner, PASSWORD), 303, 'the owner at home is not locked out');
    const away = await fetch(`${f.app.baseUrl}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-forwarded-for': '192.0.2.200',
        origin: f.app.baseUrl,
      },
      body: new URLSearchParams({ email: owner, password: PASSWORD }),
    });
    t.equal(away.status, 429, 'from a new address the owner waits too');
    t.match(await away.text(), /sign in with a passkey, or reset your password/, 'and is told the ways round it');
    t.equal(await signInFrom(f.app, OWNER_ADDRESS, memberOf('admin'), PASSWORD), 303, 'other accounts are untouched');
    t.equal(await signInFrom(f.app, '203.0.113.99', memberOf('admin'), PASSWORD), 303, 'even from new addresses');
  },
);

t.test(
  'an unknown email is throttled exactly like a member’s, so the limit tells no one who has an account',
  async (t) => {
    const f = await consoleFixture(t, { config: { trustProxy: ['loopback'] } });
    const member: number[] = [];
    const nobody: number[] = [];
    for (let i = 0; i < 7; i += 1) {
      member.push(await signInFrom(f.app, '203.0.113.5', memberOf('viewer'), `wrong ${i}`));
      nobody.push(await signInFrom(f.app, '203.0.113.6', 'nobody@northstar.example', `wrong ${i}`));
    }
    t.same(member, nobody);
    t.same(member, [401, 401, 401, 401, 401, 429, 429]);
  },
);

t.test('the current password of the change form is guessed at most ten times, then the session ends', async (t) => {
  const clock = new TestClock();
  const f = await consoleFixture(t, { clock });
  bucketsOn(f.app, clock);
  const c = f.client();
  await c.signIn(memberOf('manager'));
  clock.advance(5 * 60_000);
  const answers: number[] = [];
  for (let i = 0; i < 50 && c.cookie; i += 1) {
    const answer = await c.post('/console/account/password', {
      current: `not it ${i}`,
      password: 'a new password nobody guesses',
      confirm: 'a new password nobody guesses',
      revoke_tokens: 'on',
    });
    answers.push(answer.status);
    if (answer.status === 400) t.match(answer.text, /That is not your current password/);
    if (answer.status === 303) t.equal(answer.headers.get('location'), '/console/sign-in?why=passwords');
  }
  t.same(answers, [...wrongs(400), 303], 'ten wrong guesses at most, then signed out (not a 51st guess)');
  t.equal(c.cookie, undefined, 'the cookie is cleared');
  const told = await c.get('/console/sign-in?why=passwords');
  t.match(told.text, SIGNED_OUT_FOR_PASSWORDS.slice(0, 60), 'the sign-in page says why');
  t.equal((await c.signIn(memberOf('manager'))).status, 429, 'the right password waits too, for now');
  clock.advance(2 * 60_000);
  t.equal((await c.signIn(memberOf('manager'))).status, 303, 'and signs in a minute or two later');
  const after = await c.post('/console/account/password', {
    current: PASSWORD,
    password: 'a new password nobody guesses',
    confirm: 'a new password nobody guesses',
  });
  t.equal(after.status, 303, 'the right current password changes it');
});

t.test(
  'the recent-sign-in password field counts too: past the limit the session ends, right password or not',
  async (t) => {
    const clock = new TestClock();
    const f = await consoleFixture(t, { clock });
    bucketsOn(f.app, clock);
    const c = f.client();
    await c.signIn(memberOf('owner'));
    clock.advance(11 * 60_000);
    const create = (password: string) =>
      c.post('/console/account/tokens', { workspace: f.ws.workspace.slug, name: 'x', days: '30', password });
    const answers: number[] = [];
    for (let i = 0; i < KNOWN; i += 1) {
      const answer = await create(`wrong ${i}`);
      answers.push(answer.status);
      t.match(answer.text, /That is not your password/);
    }
    const session = c.cookie;
    const last = await create(PASSWORD);
    answers.push(last.status);
    t.same(answers, [...wrongs(400), 303]);
    t.equal(last.headers.get('location'), '/console/sign-in?why=passwords');
    const tokens = await f.app.pool.query("SELECT 1 FROM staff_access_tokens WHERE name = 'x'");
    t.equal(tokens.rowCount, 0, 'no token was made');
    c.cookie = session;
    t.equal((await c.get('/console')).status, 303, 'signed out: the old cookie no longer works');

    // The same limit through another page's recent-sign-in field: an error page in words, the session gone.
    const d = f.client();
    clock.advance(10 * 60_000);
    await d.signIn(memberOf('owner'));
    clock.advance(11 * 60_000);
    const keys = `/console/w/${f.ws.workspace.slug}/keys`;
    const live = { name: 'live key', type: 'secret', mode: 'live' };
    const statuses: number[] = [];
    for (let i = 0; i <= KNOWN; i += 1) statuses.push((await d.post(keys, { ...live, password: `wrong ${i}` })).status);
    t.same(statuses.slice(0, KNOWN), wrongs(400));
    t.equal(statuses[KNOWN], 401, 'the next: signed out');
    t.equal((await d.get('/console')).status, 303);
  },
);
