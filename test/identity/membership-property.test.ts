import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { changeMembers, MemberRefusal, type MemberChange } from '../../src/identity/members.js';
import { can, ROLES, type Operation, type Role } from '../../src/identity/permissions.js';
import { seedWorkspace, staffAccessToken, startApp } from '../support/app.js';
import { checkProperty } from '../support/properties.js';
import { everyRole, memberOf } from './support.js';

/** Admin requests of several operations; any answer but 401/403 means the request was let through. */
const REQUESTS: { operation: Operation; method: string; path: () => string; json?: unknown }[] = [
  { operation: 'webhooks.view', method: 'GET', path: () => '/webhooks' },
  {
    operation: 'webhooks.resend',
    method: 'POST',
    path: () => `/webhooks/${randomUUID()}/deliveries/${randomUUID()}/resend`,
  },
  { operation: 'leads.erase', method: 'POST', path: () => `/leads/${randomUUID()}/erase` },
  { operation: 'tasks.change', method: 'POST', path: () => '/tasks', json: {} },
  { operation: 'invoices.view', method: 'GET', path: () => '/invoices' },
  {
    operation: 'invoices.refund',
    method: 'POST',
    path: () => `/invoices/${randomUUID()}/payments/${randomUUID()}/refunds`,
    json: {},
  },
];

type Step =
  | { type: 'change'; member: number; change: 'role' | 'deactivate' | 'reactivate'; role: Role }
  | { type: 'request'; member: number; request: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    type: fc.constant('change' as const),
    member: fc.nat(ROLES.length - 1),
    change: fc.constantFrom('role' as const, 'deactivate' as const, 'reactivate' as const),
    role: fc.constantFrom(...ROLES),
  }),
  fc.record({
    type: fc.constant('request' as const),
    member: fc.nat(ROLES.length - 1),
    request: fc.nat(REQUESTS.length - 1),
  }),
);

t.test(
  'random membership changes and requests: nothing is let through that the table refuses at that moment',
  async (t) => {
    const app = await startApp(t, { config: { adminToken: 'operator-token-for-property-tests-0123456789' } });
    await checkProperty(
      t,
      'allowed only when the member is active and the table lets their current role',
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const ws = await seedWorkspace(app, everyRole());
        const emails = ROLES.map(memberOf);
        const model = new Map(emails.map((e, i) => [e, { role: ROLES[i]!, active: true }]));
        const tokens = new Map<string, string>();
        for (const s of steps) {
          const email = emails[s.member]!;
          if (s.type === 'change') {
            const current = (await app.services.workspaces.get(ws.workspace.id, Number.MAX_SAFE_INTEGER))!;
            const id = current.settings.users.find((u) => u.email === email)!.id;
            const change: MemberChange =
              s.change === 'role' ? { type: 'set_role', user_id: id, role: s.role } : { type: s.change, user_id: id };
            const next = new Map([...model].map(([k, v]) => [k, { ...v }]));
            const m = next.get(email)!;
            if (change.type === 'set_role') m.role = change.role;
            else m.active = change.type === 'reactivate';
            const ownerLeft = [...next.values()].some((v) => v.role === 'owner' && v.active);
            try {
              await changeMembers(app.pool, ws.workspace.id, change, app.services.now());
              if (!ownerLeft) return false; // the decider must have refused
              const before = model.get(email)!;
              if (before.role !== m.role || before.active !== m.active) tokens.delete(email);
              model.set(email, m);
            } catch (error) {
              if (!(error instanceof MemberRefusal) || ownerLeft) throw error;
            }
            continue;
          }
          const state = model.get(email)!;
          const current = (await app.services.workspaces.get(ws.workspace.id, Number.MAX_SAFE_INTEGER))!;
          if (!tokens.has(email)) tokens.set(email, await staffAccessToken(app, current, email));
          const request = REQUESTS[s.request]!;
          const response = await app.request(`/admin/v1/workspaces/${ws.workspace.slug}${request.path()}`, {
            method: request.method,
            headers: { authorization: `Bearer ${tokens.get(email)}` },
            ...(request.json !== undefined ? { json: request.json } : {}),
          });
          await response.arrayBuffer();
          const letThrough = response.status !== 401 && response.status !== 403;
          const allowed = state.active && can(state.role, request.operation);
          if (letThrough !== allowed) return false;
        }
        return true;
      }),
      25,
    );
  },
);
