import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { decideMembers, MemberRefusal, ownersWhoCame, type MemberChange } from '../../src/identity/members.js';
import { ROLES } from '../../src/identity/permissions.js';
import { DefinitionError } from '../../src/workspaces/definition.js';
import { applyDefinition } from '../../src/workspaces/repository.js';
import type { WorkspaceUser } from '../../src/workspaces/workspace.js';
import { consoleFixture, PASSWORD } from '../console/support.js';
import { runCli } from '../support/cli.js';
import { demoDefinition } from '../support/app.js';
import { checkProperty } from '../support/properties.js';
import { everyRole, memberOf } from './support.js';

const EMAILS = ['a@x.example', 'b@x.example', 'c@x.example', 'd@x.example'];

type MakeChange = (users: WorkspaceUser[]) => MemberChange;
const pendingKind = fc.constantFrom<'link' | 'sign_in'>('link', 'sign_in');
const at = (users: WorkspaceUser[], i: number) => users[i % users.length]!.id;

const change: fc.Arbitrary<MakeChange> = fc.oneof(
  fc
    .record({ i: fc.nat(3), role: fc.constantFrom(...ROLES), pending: pendingKind })
    .map(({ i, role, pending }): MakeChange => () => ({
      type: 'invite',
      email: EMAILS[i]!,
      name: `P${i}`,
      role,
      pending,
      branch_id: 'b',
    })),
  fc
    .record({ i: fc.nat(3), role: fc.constantFrom(...ROLES) })
    .map(({ i, role }): MakeChange => (users) => ({ type: 'set_role', user_id: at(users, i), role })),
  fc.nat(3).map((i): MakeChange => (users) => ({ type: 'deactivate', user_id: at(users, i) })),
  fc.nat(3).map((i): MakeChange => (users) => ({ type: 'reactivate', user_id: at(users, i) })),
  fc
    .record({ i: fc.nat(3), via: pendingKind })
    .map(({ i, via }): MakeChange => () => ({ type: 'accept', email: EMAILS[i]!, via })),
  fc.nat(3).map((i): MakeChange => () => ({ type: 'decline', email: EMAILS[i]! })),
);

t.test('random member changes: once an owner has come, one always stays', async (t) => {
  await checkProperty(
    t,
    'owners who came never drop to none, and an active owner always stays',
    fc.property(fc.subarray(EMAILS), fc.array(change, { minLength: 1, maxLength: 25 }), (credentialedList, changes) => {
      const credentialed = new Set(credentialedList);
      let users: WorkspaceUser[] = [
        { id: randomUUID(), name: 'A', email: EMAILS[0]!, role: 'owner', branch_id: 'b', active: true },
      ];
      for (const make of changes) {
        const before = ownersWhoCame(users, credentialed).length;
        try {
          users = decideMembers(users, make(users), credentialed);
        } catch (error) {
          if (!(error instanceof MemberRefusal)) throw error;
          continue;
        }
        if (before > 0 && ownersWhoCame(users, credentialed).length === 0) return false;
        if (!users.some((u) => u.role === 'owner' && u.active)) return false;
      }
      return true;
    }),
    300,
  );
});

t.test('the console: the only owner who came cannot step down while the other owner never came', async (t) => {
  const f = await consoleFixture(t);
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  const members = `/console/w/${f.ws.workspace.slug}/members`;
  const invited = await owner.post(`${members}/invite`, {
    name: 'Second',
    email: 'second@northstar.example',
    role: 'owner',
  });
  t.equal(invited.status, 201);
  const me = f.ws.workspace.settings.users.find((u) => u.email === memberOf('owner'))!;
  const stepDown = await owner.post(`${members}/${me.id}/role`, { role: 'admin' });
  t.equal(stepDown.status, 409);
  t.match(stepDown.text, /at least one owner who has accepted their invitation/);
  const leave = await owner.post(`${members}/${me.id}/deactivate`, {});
  t.equal(leave.status, 409);
  // Once the invited owner came (their link set their password), the first can step down.
  const link = /\/console\/invitation\/[A-Za-z0-9_-]+/.exec(invited.text)![0];
  const second = f.client();
  t.equal((await second.post(link, { password: PASSWORD, confirm: PASSWORD })).status, 303);
  t.equal((await owner.post(`${members}/${me.id}/role`, { role: 'admin' })).status, 303);
});

t.test('workspace apply (function and CLI): a file cannot leave only owners who never came', async (t) => {
  const f = await consoleFixture(t);
  const users = everyRole().users.map((u) => (u.role === 'owner' ? { ...u, role: 'admin' as const } : u));
  const file = demoDefinition({
    slug: f.ws.workspace.slug,
    users: [...users, { name: 'Never came', email: 'never@northstar.example', role: 'owner', branch: 'DEL' }],
  });
  await t.rejects(applyDefinition(f.app.pool, file, f.app.services.secretBox), DefinitionError);
  const dir = await mkdtemp(path.join(tmpdir(), 'last-owner-'));
  await writeFile(path.join(dir, 'ws.json'), JSON.stringify(file));
  const cli = await runCli(f.app.services.config.databaseUrl!, ['workspace', 'apply', path.join(dir, 'ws.json')]);
  t.equal(cli.code, 2);
  t.match(cli.stderr, /at least one owner who has accepted their invitation/);
  const still = await f.app.pool.query<{ settings: { users: WorkspaceUser[] } }>(
    'SELECT settings FROM workspaces WHERE id = $1',
    [f.ws.workspace.id],
  );
  t.equal(still.rows[0]!.settings.users.find((u) => u.email === memberOf('owner'))!.role, 'owner', 'nothing changed');
});
