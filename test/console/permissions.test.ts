import { randomUUID } from 'node:crypto';
import t from 'tap';
import { can, OPERATIONS, PERMISSIONS, ROLES, type Operation } from '../../src/identity/permissions.js';
import { memberOf } from '../identity/support.js';
import { consoleFixture } from './support.js';

/** Operations of the records pages (leads, cases, tasks, invoices, documents, audit), tested in records-table. */
const RECORDS_PAGES = /^(leads|applications|history|tasks|invoices|documents|audit)\.|^workspace\.export$/;

/** One console request per operation of the table's console door; `form` for a POST. */
function consoleRequests(
  slug: string,
  testKeyId: string,
): Record<string, { path: string; form?: Record<string, string> }> {
  const w = `/console/w/${slug}`;
  const endpoint = `${w}/webhooks/${randomUUID()}`;
  return {
    'workspace.view': { path: '/console' },
    'access_tokens.manage': {
      path: '/console/account/tokens',
      form: { workspace: slug, name: 'door test', days: '1' },
    },
    'keys.view': { path: `${w}/keys` },
    'keys.create': { path: `${w}/keys`, form: { name: 'door test', type: 'secret', mode: 'test' } },
    'keys.create_live_secret': { path: `${w}/keys`, form: { name: 'door test', type: 'secret', mode: 'live' } },
    'keys.revoke': { path: `${w}/keys/${randomUUID()}/revoke`, form: {} },
    'sandbox.view': { path: `${w}/keys/${testKeyId}` },
    'webhooks.view': { path: `${w}/webhooks` },
    'webhooks.manage': { path: `${w}/webhooks/new` },
    'webhooks.resend': { path: `${endpoint}/deliveries/${randomUUID()}/resend`, form: {} },
    'webhooks.replay': { path: `${endpoint}/retry-failed`, form: { since: '2026-11-01T00:00' } },
    'webhooks.test': { path: `${endpoint}/test`, form: {} },
    'webhooks.resume': { path: `${endpoint}/resume`, form: {} },
    'webhooks.rotate_secret': { path: `${endpoint}/rotate-secret`, form: {} },
    'members.view': { path: `${w}/members` },
    'members.invite': {
      path: `${w}/members/invite`,
      form: { name: 'Door Test', email: `door-${randomUUID().slice(0, 8)}@northstar.example`, role: 'viewer' },
    },
    'members.change': { path: `${w}/members/${randomUUID()}/role`, form: { role: 'viewer' } },
    'members.manage_owners': { path: `${w}/members/${randomUUID()}/role`, form: { role: 'owner' } },
    'members.require_passkeys': { path: `${w}/members/passkeys-required`, form: { passkeys_required: 'none' } },
    'workspace.settings': { path: `${w}/settings`, form: { time_zone: 'Asia/Kolkata' } },
    'lists.export': { path: `${w}/leads/export.csv` },
  };
}

t.test('every role × every console operation: refused in words exactly when the table refuses', async (t) => {
  const f = await consoleFixture(t);
  const testKey = await f.ws.key({ mode: 'test' });
  // The records pages' operations have their own role table (records-table.test.ts); every other console
  // operation must have a request here.
  const consoleOps = OPERATIONS.filter((op) => PERMISSIONS[op].console && !RECORDS_PAGES.test(op));
  for (const role of ROLES) {
    const c = f.client();
    t.equal((await c.signIn(memberOf(role))).status, 303, `${role} signs in`);
    const requests = consoleRequests(f.ws.workspace.slug, testKey.id);
    for (const op of consoleOps) {
      const request = requests[op];
      t.ok(request, `${op} has a console request`);
      const answer = request!.form ? await c.post(request!.path, request!.form) : await c.get(request!.path);
      const refused = answer.status === 403 && /does not allow this/.test(answer.text);
      // The owner-only operation also needs members.change, which every owner has.
      const allowed = can(role, op as Operation) && (op !== 'members.manage_owners' || can(role, 'members.change'));
      t.equal(refused, !allowed, `${role} ${op}: ${answer.status}`);
      t.notMatch(answer.text, /at \S+\.ts:\d+|SELECT .+ FROM|syntax error at/, `${role} ${op}: no stack or SQL`);
    }
  }
});
