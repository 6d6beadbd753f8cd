import fc from 'fast-check';
import t from 'tap';
import { membersLosingAccess } from '../../src/identity/members.js';
import { ROLES } from '../../src/identity/permissions.js';
import type { WorkspaceDefinition } from '../../src/workspaces/definition.js';
import { applyDefinition } from '../../src/workspaces/repository.js';
import type { WorkspaceUser } from '../../src/workspaces/workspace.js';
import { demoDefinition } from '../support/app.js';
import { checkProperty } from '../support/properties.js';
import { consoleFixture } from '../console/support.js';
import { everyRole, memberOf } from './support.js';

/** `workspace apply` of the fixture's definition with its users replaced (what the CLI runs with an edited file). */
async function applyUsers(
  f: Awaited<ReturnType<typeof consoleFixture>>,
  users: WorkspaceDefinition['users'],
): Promise<boolean> {
  const def = demoDefinition({ ...everyRole(), slug: f.ws.workspace.slug, name: f.ws.workspace.name, users });
  return (await applyDefinition(f.app.pool, def, f.app.services.secretBox)).changed;
}

t.test(
  "workspace apply ends the sessions and tokens of the members whose access it changes, and no one else's",
  async (t) => {
    const f = await consoleFixture(t);
    const signedIn = async (role: (typeof ROLES)[number]) => {
      const client = f.client();
      await client.signIn(memberOf(role));
      const token = await f.ws.tokenFor(memberOf(role));
      return {
        page: async () => (await client.get('/console')).status,
        admin: async () =>
          (
            await f.app.request(`/admin/v1/workspaces/${f.ws.workspace.slug}/webhooks`, {
              headers: { authorization: `Bearer ${token}` },
            })
          ).status,
      };
    };
    const owner = await signedIn('owner');
    const admin = await signedIn('admin');
    const counsellor = await signedIn('counsellor');
    t.equal(await admin.admin(), 200);

    t.equal(await applyUsers(f, everyRole().users), false, 'the same users: nothing changes');
    t.equal(await admin.page(), 200, 'an unchanged apply signs no one out');

    const demoted = everyRole().users.map((u) =>
      u.email === memberOf('admin') ? { ...u, role: 'viewer' as const } : u,
    );
    t.equal(await applyUsers(f, demoted), true);
    t.equal(await admin.page(), 303, "the demoted member's session ended");
    t.equal(await admin.admin(), 401, "the demoted member's token was revoked");
    t.equal(await owner.page(), 200, 'the others stay signed in');
    t.equal(await owner.admin(), 200);
    t.equal(await counsellor.page(), 200);

    const withoutCounsellor = demoted.filter((u) => u.email !== memberOf('counsellor'));
    t.equal(await applyUsers(f, withoutCounsellor), true);
    t.equal(await counsellor.page(), 303, 'a member taken out of the file is signed out');
    t.equal(await owner.page(), 200);
  },
);

const user = (email: string, role: WorkspaceUser['role'], active: boolean): WorkspaceUser => ({
  id: email,
  name: email,
  email,
  role,
  branch_id: 'b',
  active,
});

t.test('membersLosingAccess: exactly the members whose role or activity changed or who left', async (t) => {
  const member = fc.record({ role: fc.constantFrom(...ROLES), active: fc.boolean() });
  const emails = ['a@x.example', 'b@x.example', 'c@x.example', 'd@x.example'];
  const users = fc.tuple(...emails.map(() => fc.option(member, { nil: undefined })));
  await checkProperty(
    t,
    'members losing access',
    fc.property(users, users, (before, after) => {
      const list = (side: typeof before) => side.flatMap((m, i) => (m ? [user(emails[i]!, m.role, m.active)] : []));
      // The file may spell an email in another case: the rule reads emails case-insensitively.
      const afterUsers = list(after).map((u) => ({ ...u, email: u.email.toUpperCase() }));
      const losing = new Set(membersLosingAccess(list(before), afterUsers));
      emails.forEach((email, i) => {
        const was = before[i];
        const now = after[i];
        const expected = was !== undefined && (now === undefined || now.role !== was.role || now.active !== was.active);
        if (losing.has(email) !== expected) throw new Error(`${email}: expected ${expected}`);
      });
    }),
    300,
  );
});
