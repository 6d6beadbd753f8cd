import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { ensureAccount, findAccountByEmail, setPassword } from '../../src/identity/accounts.js';
import { passwordMatches } from '../../src/identity/passwords.js';
import { memberOf } from '../identity/support.js';
import { seedWorkspace } from '../support/app.js';
import { checkProperty } from '../support/properties.js';
import { ConsoleClient, consoleFixture, PASSWORD } from './support.js';

/**
 * Random invitations, link uses, acceptances and deactivations across two workspaces (no SMTP, so links of new
 * accounts are shown to the inviter, who may use them), checked after each step against a model of the rules: who
 * can sign in with which password, and which workspace each account reaches.
 */
type Ws = 0 | 1;
type Step =
  | { type: 'invite'; ws: Ws; person: number }
  | { type: 'use_link'; ws: Ws; person: number }
  | { type: 'accept_on_list'; ws: Ws; person: number }
  | { type: 'accept_by_link'; ws: Ws; person: number }
  | { type: 'deactivate'; ws: Ws; person: number };

const PEOPLE = 2;
const step: fc.Arbitrary<Step> = fc.record({
  type: fc.constantFrom('invite', 'use_link', 'accept_on_list', 'accept_by_link', 'deactivate'),
  ws: fc.constantFrom<Ws>(0, 1),
  person: fc.nat(PEOPLE - 1),
});

interface Membership {
  state: 'pending' | 'member' | 'ended';
  kind: 'link' | 'sign_in';
}
interface Model {
  password: (string | undefined)[];
  members: Map<string, Membership>[];
  /** The latest link an inviter was shown, per workspace and person, until used. */
  links: Map<string, string>[];
}

t.test('invitations across two workspaces never hand an account to anyone else', async (t) => {
  t.setTimeout(600_000);
  const f = await consoleFixture(t);
  const b = await seedWorkspace(f.app, {
    users: [{ name: 'B owner', email: 'owner-b@b.example', role: 'owner', branch: 'DEL' }],
  });
  const ownerB = await ensureAccount(f.app.pool, { email: 'owner-b@b.example', name: 'B owner' }, f.app.services.now());
  await setPassword(f.app.pool, ownerB.id, PASSWORD, f.app.services.now());
  const slugs = [f.ws.workspace.slug, b.workspace.slug];
  const inviters = [f.client(), f.client()];
  await inviters[0]!.signIn(memberOf('admin'));
  await inviters[1]!.signIn('owner-b@b.example');
  let run = 0;
  const runSteps = async (steps: Step[]): Promise<boolean> => {
    run += 1;
    const emails = Array.from({ length: PEOPLE }, (_, i) => `p${i}-${run}-${randomBytes(3).toString('hex')}@x.example`);
    const model: Model = {
      password: Array.from({ length: PEOPLE }, () => undefined),
      members: [new Map(), new Map()],
      links: [new Map(), new Map()],
    };
    const tried = new Set<string>();
    for (const [n, s] of steps.entries()) {
      const email = emails[s.person]!;
      const members = `/console/w/${slugs[s.ws]}/members`;
      const held = model.members[s.ws]!.get(email);
      switch (s.type) {
        case 'invite': {
          const answer = await inviters[s.ws]!.post(`${members}/invite`, { name: 'P', email, role: 'viewer' });
          if (held?.state === 'member') {
            if (answer.status !== 409) return false;
            break;
          }
          const kind = model.password[s.person] ? 'sign_in' : 'link';
          model.members[s.ws]!.set(email, { state: 'pending', kind });
          const link = /\/console\/invitation\/[A-Za-z0-9_-]+/.exec(answer.text)?.[0];
          // A link is shown only for an account that cannot sign in yet.
          if (Boolean(link) !== (kind === 'link')) return false;
          if (link) model.links[s.ws]!.set(email, link);
          break;
        }
        case 'use_link': {
          // The inviter, who holds the link, chooses a password with it.
          const link = model.links[s.ws]!.get(email);
          if (!link) break;
          const password = `inviter's choice ${n} ${run}`;
          tried.add(password);
          const answer = await f.client().post(link, { password, confirm: password });
          const usable = held?.state === 'pending';
          const expected = !usable ? 410 : model.password[s.person] ? 409 : 303;
          if (answer.status !== expected) return false;
          if (expected === 303) {
            model.password[s.person] = password;
            model.members[s.ws]!.set(email, { ...held!, state: 'member' });
            model.links[s.ws]!.delete(email);
          }
          break;
        }
        case 'accept_on_list':
        case 'accept_by_link': {
          const password = model.password[s.person];
          if (!password) break;
          const c = new ConsoleClient(f.app);
          if ((await c.signIn(email, password)).status !== 303) return false;
          const link = model.links[s.ws]!.get(email);
          if (s.type === 'accept_by_link' && !link) break;
          const path = s.type === 'accept_on_list' ? `/console/invitations/${slugs[s.ws]}/accept` : `${link}/accept`;
          const answer = await c.post(path, {});
          const joins = held?.state === 'pending' && (s.type === 'accept_by_link' || held.kind === 'sign_in');
          if ((answer.status === 303) !== joins) return false;
          if (joins) model.members[s.ws]!.set(email, { ...held!, state: 'member' });
          if (s.type === 'accept_by_link' && joins) model.links[s.ws]!.delete(email);
          break;
        }
        case 'deactivate': {
          const page = await inviters[s.ws]!.get(members);
          const id = /members\/([0-9a-f-]{36})\/deactivate"/.exec(
            page.text.slice(page.text.indexOf(`<td>${email}</td>`)),
          )?.[1];
          if (!held || held.state === 'ended') break;
          if (!id) return false;
          if ((await inviters[s.ws]!.post(`${members}/${id}/deactivate`, {})).status !== 303) return false;
          model.members[s.ws]!.set(email, { ...held, state: 'ended' });
          break;
        }
      }
      if (!(await agrees(f, emails, model, slugs, tried))) return false;
    }
    return true;
  };

  // The interleavings that matter, forced: a second workspace's link after the first set the password up; a link
  // invitation refused on the list and accepted by its link; an existing account joining on the list; a withdrawn link.
  const forced: Step[][] = [
    [
      { type: 'invite', ws: 0, person: 0 },
      { type: 'invite', ws: 1, person: 0 },
      { type: 'use_link', ws: 0, person: 0 },
      { type: 'use_link', ws: 1, person: 0 },
    ],
    [
      { type: 'invite', ws: 1, person: 0 },
      { type: 'invite', ws: 0, person: 0 },
      { type: 'use_link', ws: 0, person: 0 },
      { type: 'accept_on_list', ws: 1, person: 0 },
      { type: 'accept_by_link', ws: 1, person: 0 },
    ],
    [
      { type: 'invite', ws: 0, person: 0 },
      { type: 'use_link', ws: 0, person: 0 },
      { type: 'invite', ws: 1, person: 0 },
      { type: 'accept_on_list', ws: 1, person: 0 },
    ],
    [
      { type: 'invite', ws: 0, person: 1 },
      { type: 'deactivate', ws: 0, person: 1 },
      { type: 'use_link', ws: 0, person: 1 },
      { type: 'invite', ws: 0, person: 1 },
      { type: 'use_link', ws: 0, person: 1 },
    ],
  ];
  for (const [i, steps] of forced.entries())
    t.ok(await runSteps(steps), `forced interleaving ${i + 1} follows the model`);

  await checkProperty(
    t,
    'who signs in as whom, and where, follows the model',
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), runSteps),
    25,
  );
});

/** Each person signs in with the model's password only, and reaches exactly the workspaces the model says. */
async function agrees(
  f: Awaited<ReturnType<typeof consoleFixture>>,
  emails: string[],
  model: Model,
  slugs: string[],
  tried: Set<string>,
): Promise<boolean> {
  for (const [i, email] of emails.entries()) {
    const password = model.password[i];
    // Every other password chosen in the run is checked against the stored hash (failed sign-ins would trip the
    // sign-in throttle, which has tests of its own).
    const account = await findAccountByEmail(f.app.pool, email);
    for (const other of tried)
      if (other !== password && account?.password_hash && (await passwordMatches(account.password_hash, other)))
        return false;
    if (!password) {
      if (account?.password_hash) return false;
      continue;
    }
    const c = new ConsoleClient(f.app);
    if ((await c.signIn(email, password)).status !== 303) return false;
    for (const [w, slug] of slugs.entries()) {
      const reaches = (await c.get(`/console/w/${slug}/members`)).status === 200;
      if (reaches !== (model.members[w]!.get(email)?.state === 'member')) return false;
    }
  }
  return true;
}
