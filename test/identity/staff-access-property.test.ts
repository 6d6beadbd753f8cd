import fc from 'fast-check';
import t from 'tap';
import { ensureAccount, setPassword } from '../../src/identity/accounts.js';
import { issuePasswordResetToken } from '../../src/identity/one-time-tokens.js';
import { passwordMatches, passwordWeakness } from '../../src/identity/passwords.js';
import { IDENTITY_POLICY } from '../../src/identity/policy.js';
import { MemoryRateLimitStore } from '../../src/ratelimit/memory-store.js';
import { withTransaction } from '../../src/storage/postgres.js';
import { ConsoleClient, shownOnce } from '../console/support.js';
import { seedWorkspace, startApp, type TestApp } from '../support/app.js';
import { checkProperty } from '../support/properties.js';

/**
 * The rules of staff access as a small model: which password each account has, which of its sessions, personal
 * access tokens and reset links are live. Each step is done through the real console (HTTP on loopback, PostgreSQL)
 * and the model; after each, every password, session, token and link is checked against the model.
 */
interface AccountModel {
  email: string;
  password: string;
  /** Passwords it had before: none of them signs in. */
  former: string[];
  /** Workspaces (index into the run's two) it is a member of. */
  workspaces: number[];
  /** Session cookies, each live or not. */
  sessions: { cookie: string; live: boolean }[];
  tokens: { value: string; live: boolean }[];
  links: { path: string; live: boolean }[];
}

type Step =
  | { kind: 'sign_in'; who: number }
  | { kind: 'create_token'; who: number; where: number }
  | { kind: 'sign_out_everywhere'; who: number }
  | { kind: 'change_password'; who: number; revokeTokens: boolean }
  | { kind: 'request_reset'; who: number }
  | { kind: 'use_reset'; who: number; which: 'latest' | 'oldest' };
// Invitations and acceptances (another module's rules) are steps to add here: an `invite` step would add a link to
// the invited account's model (a new account, or a membership of an existing one after it signs in and accepts),
// and `accept` would move its workspaces; the checks below already cover whatever such a step changes.

const who = fc.nat({ max: 2 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('sign_in' as const), who }),
  fc.record({ kind: fc.constant('create_token' as const), who, where: fc.nat({ max: 1 }) }),
  fc.record({ kind: fc.constant('sign_out_everywhere' as const), who }),
  fc.record({ kind: fc.constant('change_password' as const), who, revokeTokens: fc.boolean() }),
  fc.record({ kind: fc.constant('request_reset' as const), who }),
  fc.record({
    kind: fc.constant('use_reset' as const),
    who,
    which: fc.constantFrom('latest' as const, 'oldest' as const),
  }),
);

const WORDS = ['lantern', 'orbit', 'meadow', 'quiet', 'copper', 'violin', 'tundra', 'saffron', 'harbour', 'pebble'];
let passwords = 0;
/** A new password the rules accept (checked here, so a refusal is never mistaken for a rule broken). */
async function freshPassword(): Promise<string> {
  passwords += 1;
  const n = passwords;
  const value = `${WORDS[n % 10]} ${WORDS[(n * 3 + 1) % 10]} ${WORDS[(n * 7 + 2) % 10]} ${n}`;
  if (await passwordWeakness(value, { email: 'x@y.example', workspaces: [] })) throw new Error(`weak: ${value}`);
  return value;
}

let runs = 0;
async function setUp(app: TestApp): Promise<{ models: AccountModel[]; slugs: string[] }> {
  runs += 1;
  const email = (name: string) => `${name}.${runs}@property.example`;
  const [alice, bob, carol] = [email('alice'), email('bob'), email('carol')];
  const user = (name: string, address: string, role: 'owner' | 'admin' | 'viewer') => ({
    name,
    email: address,
    role,
    branch: 'DEL',
  });
  // Two workspaces: Bob is a member of both (viewer in one, owner of the other).
  const first = await seedWorkspace(app, { users: [user('Alice', alice, 'owner'), user('Bob', bob, 'viewer')] });
  const second = await seedWorkspace(app, { users: [user('Bob', bob, 'owner'), user('Carol', carol, 'admin')] });
  const models: AccountModel[] = [];
  for (const [address, workspaces] of [
    [alice, [0]],
    [bob, [0, 1]],
    [carol, [1]],
  ] as const) {
    const account = await ensureAccount(app.pool, { email: address, name: address }, app.services.now());
    const password = await freshPassword();
    await setPassword(app.pool, account.id, password, app.services.now());
    models.push({
      email: address,
      password,
      former: [],
      workspaces: [...workspaces],
      sessions: [],
      tokens: [],
      links: [],
    });
  }
  return { models, slugs: [first.workspace.slug, second.workspace.slug] };
}

t.test('resets, password changes, tokens, sign-outs and sign-ins across two workspaces follow the model', async (t) => {
  const app = await startApp(t, {
    // The admin interface (where tokens are used) is on only with an operator token.
    config: {
      adminToken: 'operator-token-for-property-tests-0123456789',
      authFailureLimit: { capacity: 1_000_000, refill_per_second: 1_000 },
    },
  });
  // Throttling is not this property's subject: every bucket is full again at each request.
  let tick = 0;
  app.services.rateLimits = new MemoryRateLimitStore(() => (tick += 86_400_000));

  /** A client of a live session of the account (signing in when it has none). */
  const signedIn = async (m: AccountModel) => {
    const client = new ConsoleClient(app);
    const live = m.sessions.find((s) => s.live);
    if (live) client.cookie = live.cookie;
    else await signInAs(m, client);
    return client;
  };
  const signInAs = async (m: AccountModel, client: ConsoleClient) => {
    if ((await client.signIn(m.email, m.password)).status !== 303) throw new Error(`${m.email} could not sign in`);
    m.sessions.push({ cookie: client.cookie!, live: true });
  };
  // A new password ends every session and outstanding reset link (tokens when asked); signing out everywhere ends
  // sessions and tokens, and leaves a reset link in the member's mailbox working (the password did not change).
  const endAccess = (m: AccountModel, o: { tokens: boolean; links: boolean }) => {
    for (const s of m.sessions) s.live = false;
    if (o.tokens) for (const k of m.tokens) k.live = false;
    if (o.links) for (const l of m.links) l.live = false;
  };

  async function apply(models: AccountModel[], slugsOfRun: string[], s: Step): Promise<void> {
    const m = models[s.who]!;
    switch (s.kind) {
      case 'sign_in':
        await signInAs(m, new ConsoleClient(app));
        return;
      case 'create_token': {
        const client = await signedIn(m);
        const slug = slugsOfRun[m.workspaces[s.where % m.workspaces.length]!]!;
        const page = await client.post('/console/account/tokens', {
          workspace: slug,
          name: 'property',
          days: '30',
          password: m.password,
        });
        const value = await shownOnce(client, page);
        if (!value) throw new Error(`no token made (${page.status})`);
        m.tokens.push({ value, live: true });
        return;
      }
      case 'sign_out_everywhere': {
        const client = await signedIn(m);
        if ((await client.post('/console/account/sign-out-everywhere', {})).status !== 303) throw new Error('refused');
        endAccess(m, { tokens: true, links: false });
        return;
      }
      case 'change_password': {
        const client = await signedIn(m);
        const next = await freshPassword();
        const answer = await client.post('/console/account/password', {
          current: m.password,
          password: next,
          confirm: next,
          ...(s.revokeTokens ? { revoke_tokens: 'on' } : {}),
        });
        if (answer.status !== 303) throw new Error(`change refused (${answer.status})`);
        endAccess(m, { tokens: s.revokeTokens, links: true });
        m.sessions.push({ cookie: client.cookie!, live: true });
        m.former.push(m.password);
        m.password = next;
        return;
      }
      case 'request_reset': {
        const account = await app.pool.query<{ id: string }>('SELECT id FROM staff_accounts WHERE email = $1', [
          m.email,
        ]);
        // What the reset mailer does for a member's request (the mail itself is tested in password-resets.test.ts).
        const token = await withTransaction(app.pool, (sql) =>
          issuePasswordResetToken(sql, {
            accountId: account.rows[0]!.id,
            now: app.services.now(),
            lifetimeMs: IDENTITY_POLICY.passwordResetMs,
          }),
        );
        for (const l of m.links) l.live = false;
        m.links.push({ path: `/console/reset/${token}`, live: true });
        return;
      }
      case 'use_reset': {
        const link = s.which === 'latest' ? m.links.at(-1) : m.links[0];
        if (!link) return;
        const client = new ConsoleClient(app);
        const next = await freshPassword();
        const answer = await client.post(link.path, { password: next, confirm: next });
        if (answer.status !== (link.live ? 303 : 410)) throw new Error(`reset answered ${answer.status}`);
        if (!link.live) return;
        endAccess(m, { tokens: true, links: true });
        m.sessions.push({ cookie: client.cookie!, live: true });
        m.former.push(m.password);
        m.password = next;
        return;
      }
    }
  }

  async function check(models: AccountModel[], slugsOfRun: string[], after: Step): Promise<void> {
    const where = `after ${JSON.stringify(after)}`;
    for (const m of models) {
      const stored = await app.pool.query<{ password_hash: string }>(
        'SELECT password_hash FROM staff_accounts WHERE email = $1',
        [m.email],
      );
      const hash = stored.rows[0]!.password_hash;
      if (!(await passwordMatches(hash, m.password))) throw new Error(`${m.email}: its password fails ${where}`);
      const last = m.former.at(-1);
      if (last && (await passwordMatches(hash, last))) throw new Error(`${m.email}: a former password works ${where}`);
      for (const s of m.sessions) {
        const probe = new ConsoleClient(app);
        probe.cookie = s.cookie;
        const status = (await probe.get('/console')).status;
        if ((status === 200) !== s.live) throw new Error(`${m.email}: a session answered ${status} ${where}`);
      }
      for (const token of m.tokens) {
        let works = false;
        for (const slug of slugsOfRun) {
          const answer = await app.request(`/admin/v1/workspaces/${slug}/webhooks`, {
            headers: { authorization: `Bearer ${token.value}` },
          });
          works ||= answer.status === 200;
        }
        if (works !== token.live) throw new Error(`${m.email}: a token ${works ? 'works' : 'fails'} ${where}`);
      }
      for (const link of m.links) {
        const status = (await new ConsoleClient(app).get(link.path)).status;
        if ((status === 200) !== link.live) throw new Error(`${m.email}: a reset link answered ${status} ${where}`);
      }
    }
  }

  await checkProperty(
    t,
    'staff access follows the model',
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async (steps) => {
      const { models, slugs: slugsOfRun } = await setUp(app);
      for (const s of steps) {
        await apply(models, slugsOfRun, s);
        await check(models, slugsOfRun, s);
      }
    }),
    6,
    // The model once ended reset links on sign-out everywhere, which the rules do not (a password change does).
    [554263391],
  );
});
