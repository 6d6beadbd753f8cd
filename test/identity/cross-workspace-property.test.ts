import fc from 'fast-check';
import t from 'tap';
import { ensureAccount, setPassword } from '../../src/identity/accounts.js';
import { issuePasswordResetToken } from '../../src/identity/one-time-tokens.js';
import { setPasskeyRequirement } from '../../src/identity/passkey-requirement.js';
import { secretHash } from '../../src/identity/secrets.js';
import { savePasskey } from '../../src/identity/passkeys.js';
import { IDENTITY_POLICY } from '../../src/identity/policy.js';
import { MemoryRateLimitStore } from '../../src/ratelimit/memory-store.js';
import { withTransaction } from '../../src/storage/postgres.js';
import type { PasskeyRequirement } from '../../src/workspaces/workspace.js';
import { ConsoleClient, shownOnce } from '../console/support.js';
import { seedWorkspace, startApp } from '../support/app.js';
import { checkProperty } from '../support/properties.js';

/**
 * Accounts across three workspaces, from an attacker's side: each workspace's owner invites, sends first links, resets
 * passkeys and switches the passkey requirement, and holds every link shown to them (no SMTP). People accept, sign in
 * with or without a passkey, reset their passwords and make tokens. A model says, after every step, who can sign in,
 * which workspaces each reaches with a password alone and with a passkey, and which tokens work; every step goes
 * through the console over HTTP on loopback against PostgreSQL, except two the console does in a browser ceremony
 * (registering a passkey, using one), which write the rows the ceremony writes.
 */

const ROLES_INVITED = ['admin', 'viewer'] as const;
type InvitedRole = (typeof ROLES_INVITED)[number];
type Role = 'owner' | 'counsellor' | InvitedRole;
const REQUIREMENTS: PasskeyRequirement[] = ['none', 'owners_and_admins', 'everyone'];

interface Place {
  role: Role;
  active: boolean;
  /** An invitation waiting: answered through its link (`link`) or after signing in (`sign_in`). */
  pending: 'link' | 'sign_in' | null;
}

interface Person {
  email: string;
  password: string | null;
  passkeys: number;
  sessions: { cookie: string; passkey: boolean; live: boolean }[];
  tokens: { value: string; workspace: number; role: Role; madeWithPasskey: boolean; live: boolean }[];
}

interface Model {
  slugs: string[];
  people: Person[];
  /** places[w][p]: person p's place in workspace w. */
  places: (Place | undefined)[][];
  requirements: PasskeyRequirement[];
  /** Links shown to the owner of a workspace: whoever holds one can try to set up the account with it. */
  links: { path: string; workspace: number; person: number; live: boolean }[];
}

type Step =
  | { kind: 'invite'; by: number; who: number; role: InvitedRole }
  /** An invitation, then the invitee's acceptance from their list: how accounts come to span workspaces. */
  | { kind: 'join'; by: number; who: number; role: InvitedRole }
  | { kind: 'first_link'; by: number; who: number }
  | { kind: 'use_link'; which: number }
  | { kind: 'accept'; who: number; where: number }
  | { kind: 'reset_passkeys'; by: number; who: number }
  | { kind: 'register_passkey'; who: number }
  | { kind: 'require'; where: number; requirement: PasskeyRequirement }
  | { kind: 'create_token'; who: number; where: number; passkey: boolean }
  | { kind: 'reset_password'; who: number };

const PEOPLE = 6;
const person = fc.nat({ max: PEOPLE - 1 });
const workspace = fc.nat({ max: 2 });
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('invite' as const),
      by: workspace,
      who: person,
      role: fc.constantFrom(...ROLES_INVITED),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('join' as const),
      by: workspace,
      who: person,
      role: fc.constantFrom(...ROLES_INVITED),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('first_link' as const), by: workspace, who: person }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('use_link' as const), which: fc.nat({ max: 5 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('accept' as const), who: person, where: workspace }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('reset_passkeys' as const), by: workspace, who: person }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('register_passkey' as const), who: person }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('require' as const),
      where: workspace,
      requirement: fc.constantFrom(...REQUIREMENTS),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('create_token' as const),
      who: person,
      where: workspace,
      passkey: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reset_password' as const), who: person }) },
);

const WORDS = ['lantern', 'orbit', 'meadow', 'quiet', 'copper', 'violin', 'tundra', 'saffron', 'harbour', 'pebble'];
let passwords = 0;
const freshPassword = () => {
  passwords += 1;
  const n = passwords;
  return `${WORDS[n % 10]} ${WORDS[(n * 3 + 1) % 10]} ${WORDS[(n * 7 + 2) % 10]} ${n}`;
};

// --- the rules, as the model states them ---------------------------------------------------------------------

const accepted = (p: Place | undefined) => Boolean(p?.active && !p.pending);
const covers = (requirement: PasskeyRequirement, role: Role) =>
  requirement === 'everyone' || (requirement === 'owners_and_admins' && (role === 'owner' || role === 'admin'));
/** An accepted member of a workspace other than `w`. */
const memberElsewhere = (m: Model, p: number, w: number) =>
  m.places.some((places, o) => o !== w && accepted(places[p]));
/** An invitation link of `w` may create the credentials: none yet, and a member of no other workspace. */
const openTo = (m: Model, p: number, w: number) => m.people[p]!.password === null && !memberElsewhere(m, p, w);
/** Whether a session reaches workspace `w`: an accepted member, with a passkey when the workspace asks one. */
const reaches = (m: Model, p: number, w: number, passkey: boolean) => {
  const place = m.places[w]![p];
  return accepted(place) && (passkey || !covers(m.requirements[w]!, place!.role));
};
/** A session owes a passkey when any of its workspaces asks one of its role and none was used. */
const owesPasskey = (m: Model, p: number, passkey: boolean) =>
  !passkey && m.places.some((places, w) => accepted(places[p]) && covers(m.requirements[w]!, places[p]!.role));
const tokenWorks = (m: Model, p: number, token: Person['tokens'][number]) => {
  const place = m.places[token.workspace]![p];
  if (!token.live || !accepted(place) || place!.role !== token.role) return false;
  return !covers(m.requirements[token.workspace]!, token.role) || (token.madeWithPasskey && m.people[p]!.passkeys > 0);
};

let runs = 0;

t.test('accounts across three workspaces follow the model of who can sign in where', async (t) => {
  const app = await startApp(t, {
    config: {
      adminToken: 'operator-token-for-property-tests-0123456789',
      authFailureLimit: { capacity: 1_000_000, refill_per_second: 1_000 },
    },
  });
  // Throttling is not this property's subject: every bucket is full again at each request.
  let tick = 0;
  app.services.rateLimits = new MemoryRateLimitStore(() => (tick += 86_400_000));

  async function setUp(): Promise<Model> {
    runs += 1;
    const email = (name: string) => `${name}.${runs}@three.example`;
    const emails = ['olga', 'omar', 'otto', 'vikram', 'meera', 'newton'].map(email);
    const user = (p: number, role: Role) => ({ name: `Person ${p}`, email: emails[p]!, role, branch: 'DEL' });
    // People 0–2 own workspaces 0–2; 3 is named by workspace 0's file, 4 by the files of 1 and 2 (never signed in);
    // 5 has no account until someone invites them.
    const files = [
      [user(0, 'owner'), user(3, 'counsellor')],
      [user(1, 'owner'), user(4, 'viewer')],
      [user(2, 'owner'), user(4, 'admin')],
    ];
    const slugs: string[] = [];
    for (const users of files) slugs.push((await seedWorkspace(app, { users })).workspace.slug);
    const people: Person[] = emails.map((e) => ({ email: e, password: null, passkeys: 0, sessions: [], tokens: [] }));
    for (const p of [0, 1, 2]) {
      const account = await ensureAccount(app.pool, { email: emails[p]!, name: `Person ${p}` }, app.services.now());
      people[p]!.password = freshPassword();
      await setPassword(app.pool, account.id, people[p]!.password!, app.services.now());
    }
    const places = files.map((users) =>
      emails.map((e) => {
        const u = users.find((x) => x.email === e);
        return u ? { role: u.role, active: true, pending: null } : undefined;
      }),
    );
    return { slugs, people, places, requirements: ['none', 'none', 'none'], links: [] };
  }

  const accountId = async (email: string) =>
    (await app.pool.query<{ id: string }>('SELECT id FROM staff_accounts WHERE email = $1', [email])).rows[0]?.id;

  /**
   * A new session of the person (a password sign-in), marked as having used a passkey when asked and the account has
   * one; kept in the model (probed after every step) unless `keep` is false.
   */
  async function session(m: Model, p: number, passkey: boolean, keep = true): Promise<ConsoleClient | undefined> {
    const who = m.people[p]!;
    if (who.password === null) return undefined;
    const client = new ConsoleClient(app);
    if ((await client.signIn(who.email, who.password)).status !== 303) throw new Error(`${who.email} cannot sign in`);
    const used = passkey && who.passkeys > 0;
    // What a passkey ceremony in this session records (the Chromium suite does the real one).
    if (used)
      await app.pool.query(
        'UPDATE staff_sessions SET passkey_at = now(), authenticated_at = now() WHERE id_hash = $1',
        [secretHash(client.cookie!.slice(client.cookie!.indexOf('=') + 1))],
      );
    if (keep) who.sessions.push({ cookie: client.cookie!, passkey: used, live: true });
    return client;
  }

  const userIdOf = async (slug: string, email: string) => {
    const row = await app.pool.query<{ id: string }>(
      `SELECT u->>'id' AS id FROM workspaces, jsonb_array_elements(settings->'users') u
        WHERE slug = $1 AND u->>'email' = $2`,
      [slug, email],
    );
    return row.rows[0]?.id;
  };
  const linkIn = (text: string) => /\/console\/invitation\/[A-Za-z0-9_-]+/.exec(text)?.[0];
  const endSessions = (who: Person) => who.sessions.forEach((s) => (s.live = false));

  /**
   * Steps aimed where they matter: half the time a token is made in one of the person's own workspaces, an acceptance
   * answers one of their invitations, and a reset names a member of the resetting workspace (the other half keeps the
   * drawn numbers, which reach the refusals).
   */
  function aimed(m: Model, s: Step, aim: boolean): Step {
    if (!aim) return s;
    const places = (p: number) => [0, 1, 2].filter((w) => accepted(m.places[w]![p]));
    switch (s.kind) {
      case 'create_token': {
        const own = places(s.who);
        return own.length ? { ...s, where: own[s.where % own.length]! } : s;
      }
      case 'accept': {
        const waiting = [0, 1, 2].filter((w) => m.places[w]![s.who]?.active && m.places[w]![s.who]?.pending);
        return waiting.length ? { ...s, where: waiting[s.where % waiting.length]! } : s;
      }
      case 'reset_passkeys': {
        const members = m.people.map((_, p) => p).filter((p) => p !== s.by && accepted(m.places[s.by]![p]));
        return members.length ? { ...s, who: members[s.who % members.length]! } : s;
      }
      default:
        return s;
    }
  }

  async function apply(m: Model, s: Step): Promise<void> {
    switch (s.kind) {
      case 'join':
        await apply(m, { ...s, kind: 'invite' });
        await apply(m, { kind: 'accept', who: s.who, where: s.by });
        return;
      case 'invite':
      case 'first_link': {
        const owner = m.people[s.by]!;
        if (s.who === s.by) return;
        const canAct = reaches(m, s.by, s.by, owner.passkeys > 0);
        const client = await session(m, s.by, true);
        const place = m.places[s.by]![s.who];
        const target = m.people[s.who]!;
        const neverSignedIn = accepted(place) && target.password === null;
        let answer;
        if (s.kind === 'invite') {
          answer = await client!.post(`/console/w/${m.slugs[s.by]}/members/invite`, {
            name: `Person ${s.who}`,
            email: target.email,
            role: s.role,
          });
        } else {
          const id = await userIdOf(m.slugs[s.by]!, target.email);
          if (!id) return;
          answer = await client!.post(`/console/w/${m.slugs[s.by]}/members/${id}/first-link`, {});
        }
        if (!canAct) {
          if (answer.status !== 303 || answer.headers.get('location') !== '/console/passkeys/required')
            throw new Error(`an owner who owes a passkey acted (${answer.status})`);
          return;
        }
        if (s.kind === 'first_link' && !neverSignedIn) {
          if (answer.status !== 409) throw new Error(`a first link for a member who can sign in: ${answer.status}`);
          return;
        }
        if (s.kind === 'invite' && accepted(place) && !neverSignedIn) {
          if (answer.status !== 409) throw new Error(`an invitation of a member answered ${answer.status}`);
          return;
        }
        const shown = linkIn(answer.text);
        if (Boolean(shown) !== openTo(m, s.who, s.by))
          throw new Error(`a link was ${shown ? '' : 'not '}shown for person ${s.who} by workspace ${s.by}`);
        if (shown) m.links.push({ path: shown, workspace: s.by, person: s.who, live: true });
        if (s.kind === 'invite' && !neverSignedIn)
          m.places[s.by]![s.who] = {
            role: s.role,
            active: true,
            pending: target.password === null ? 'link' : 'sign_in',
          };
        return;
      }
      case 'use_link': {
        const link = m.links[s.which % Math.max(1, m.links.length)];
        if (!link) return;
        const who = m.people[link.person]!;
        const place = m.places[link.workspace]![link.person];
        const password = freshPassword();
        const answer = await new ConsoleClient(app).post(link.path, { password, confirm: password }, { csrf: false });
        const waiting = Boolean(place?.active && (place.pending || who.password === null));
        const sets = link.live && waiting && openTo(m, link.person, link.workspace);
        if ((answer.status === 303) !== sets) throw new Error(`a link answered ${answer.status}, model: ${sets}`);
        if (!sets) return;
        link.live = false;
        who.password = password;
        m.places[link.workspace]![link.person] = { ...place!, pending: null };
        return;
      }
      case 'accept': {
        const place = m.places[s.where]![s.who];
        const client = await session(m, s.who, true);
        if (!client) return;
        const answer = await client.post(`/console/invitations/${m.slugs[s.where]}/accept`, {});
        const passkey = m.people[s.who]!.sessions.at(-1)!.passkey;
        const joins = place?.active === true && place.pending === 'sign_in' && !owesPasskey(m, s.who, passkey);
        const joined = answer.status === 303 && /joined=/.test(answer.headers.get('location') ?? '');
        if (joined !== joins) throw new Error(`accepting answered ${answer.status}, model: ${joins}`);
        if (joins) m.places[s.where]![s.who] = { ...place!, pending: null };
        return;
      }
      case 'reset_passkeys': {
        if (s.who === s.by) return;
        const id = await userIdOf(m.slugs[s.by]!, m.people[s.who]!.email);
        if (!id) return;
        const canAct = reaches(m, s.by, s.by, m.people[s.by]!.passkeys > 0);
        const client = await session(m, s.by, true);
        const answer = await client!.post(`/console/w/${m.slugs[s.by]}/members/${id}/reset-passkeys`, {});
        const target = m.people[s.who]!;
        const allowed = canAct && accepted(m.places[s.by]![s.who]) && !memberElsewhere(m, s.who, s.by);
        if ((answer.status === 303 && !/passkeys\/required/.test(answer.headers.get('location') ?? '')) !== allowed)
          throw new Error(`a passkey reset answered ${answer.status}, model: ${allowed}`);
        if (!allowed) return;
        target.passkeys = 0;
        endSessions(target);
        return;
      }
      case 'register_passkey': {
        const who = m.people[s.who]!;
        const id = await accountId(who.email);
        if (!id || who.password === null || who.passkeys > 0) return;
        await savePasskey(app.pool, {
          credentialId: `cred-${id}-${runs}`,
          accountId: id,
          publicKey: new Uint8Array([1, 2, 3]),
          counter: 0,
          transports: [],
          name: 'property',
          now: app.services.now(),
        });
        who.passkeys = 1;
        return;
      }
      case 'require': {
        const ws = await app.pool.query<{ id: string }>('SELECT id FROM workspaces WHERE slug = $1', [
          m.slugs[s.where],
        ]);
        await setPasskeyRequirement(app.pool, ws.rows[0]!.id, s.requirement, app.services.now());
        m.requirements[s.where] = s.requirement;
        return;
      }
      case 'create_token': {
        const client = await session(m, s.who, s.passkey);
        if (!client) return;
        const passkey = m.people[s.who]!.sessions.at(-1)!.passkey;
        const place = m.places[s.where]![s.who];
        const made = await client.post('/console/account/tokens', {
          workspace: m.slugs[s.where]!,
          name: 'property',
          days: '30',
        });
        const value = await shownOnce(client, made);
        const expected = accepted(place) && !owesPasskey(m, s.who, passkey) && reaches(m, s.who, s.where, passkey);
        if (Boolean(value) !== expected) throw new Error(`a token was ${value ? '' : 'not '}made (${made.status})`);
        if (value)
          m.people[s.who]!.tokens.push({
            value,
            workspace: s.where,
            role: place!.role,
            madeWithPasskey: passkey,
            live: true,
          });
        return;
      }
      case 'reset_password': {
        const who = m.people[s.who]!;
        const id = await accountId(who.email);
        if (!id || who.password === null) return;
        // What the reset mailer sends the account's own address (the mail is tested in password-resets.test.ts).
        const token = await withTransaction(app.pool, (sql) =>
          issuePasswordResetToken(sql, {
            accountId: id,
            now: app.services.now(),
            lifetimeMs: IDENTITY_POLICY.passwordResetMs,
          }),
        );
        const password = freshPassword();
        const answer = await new ConsoleClient(app).post(`/console/reset/${token}`, { password, confirm: password });
        if (answer.status !== 303) throw new Error(`a reset answered ${answer.status}`);
        who.password = password;
        endSessions(who);
        who.tokens.forEach((k) => (k.live = false));
        return;
      }
    }
  }

  async function check(m: Model, after: Step): Promise<void> {
    const where = `after ${JSON.stringify(after)}`;
    for (const [p, who] of m.people.entries()) {
      const wrong = await new ConsoleClient(app).signIn(who.email, 'not the password of anyone here');
      if (wrong.status === 303) throw new Error(`${who.email}: a wrong password signs in ${where}`);
      for (const passkey of [false, true]) {
        if (passkey && who.passkeys === 0) continue;
        const client = await session(m, p, passkey, false);
        if (!client) continue;
        for (const w of [0, 1, 2]) {
          const status = (await client.get(`/console/w/${m.slugs[w]}/leads`)).status;
          if ((status === 200) !== reaches(m, p, w, passkey))
            throw new Error(
              `${who.email} (${passkey ? 'passkey' : 'password'}) reads workspace ${w}: ${status} ${where}`,
            );
        }
      }
      for (const token of who.tokens) {
        const answer = await app.request(`/admin/v1/workspaces/${m.slugs[token.workspace]}/tasks`, {
          headers: { authorization: `Bearer ${token.value}` },
        });
        if ((answer.status === 200) !== tokenWorks(m, p, token))
          throw new Error(`${who.email}: a token of workspace ${token.workspace} answered ${answer.status} ${where}`);
      }
      for (const s of who.sessions) {
        const probe = new ConsoleClient(app);
        probe.cookie = s.cookie;
        const answer = await probe.get('/console/account');
        const status = answer.status;
        // A live session answers 200, or 303 to the passkey step when it owes one; an ended one 303 to sign in.
        const toStep = status === 303 && answer.headers.get('location') === '/console/passkeys/required';
        if (toStep && !owesPasskey(m, p, s.passkey)) throw new Error(`${who.email}: led to the passkey step ${where}`);
        const live = status === 200 || toStep;
        if (live !== s.live) throw new Error(`${who.email}: a session answered ${status} ${where}`);
      }
    }
  }

  await checkProperty(
    t,
    'accounts across three workspaces follow the model',
    fc.asyncProperty(fc.array(fc.tuple(step, fc.boolean()), { minLength: 1, maxLength: 14 }), async (steps) => {
      const m = await setUp();
      for (const [drawn, aim] of steps) {
        const s = aimed(m, drawn, aim);
        await apply(m, s);
        await check(m, s);
      }
    }),
    25,
  );
});
