import { randomBytes } from 'node:crypto';
import type { Test } from 'tap';
import type { AdminApplication } from '../../src/schemas/application.js';
import type { StoredEvent } from '../../src/events/types.js';
import { seedWorkspace, startApp, type SeededWorkspace, type TestApp } from '../support/app.js';
import type { WorkspaceDefinition } from '../../src/workspaces/definition.js';

export const ADMIN_TOKEN = 'admin-token-for-tests-0123456789';
export const STAFF = 'asha@northstar.example';

export interface AppFixture {
  app: TestApp;
  ws: SeededWorkspace;
  /** A lead created through POST /v1/leads with the given key (live secret by default); returns its id. */
  lead(key?: string): Promise<string>;
  /** A request to the admin interface of this workspace as a staff member (the owner's access token by default). */
  admin(
    path: string,
    init?: { method?: string; json?: unknown; user?: string; sandbox?: boolean; token?: string; workspace?: string },
  ): Promise<Response>;
  convert(leadId: string, sandbox?: boolean): Promise<AdminApplication>;
  stream(id: string): Promise<StoredEvent[]>;
}

export async function appFixture(
  t: Test,
  overrides: Partial<WorkspaceDefinition> = {},
  options: { now?: () => Date } = {},
): Promise<AppFixture> {
  const app = await startApp(t, { config: { adminToken: ADMIN_TOKEN }, now: options.now });
  const ws = await seedWorkspace(app, overrides);
  return fixtureFor(app, ws);
}

export function fixtureFor(app: TestApp, ws: SeededWorkspace): AppFixture {
  const fixture: AppFixture = {
    app,
    ws,
    async lead(key = ws.live) {
      const email = `applicant-${randomBytes(6).toString('hex')}@example.org`;
      const response = await app.request('/v1/leads', {
        method: 'POST',
        key,
        json: { full_name: 'Priya Applicant', email, consent: true },
      });
      if (response.status !== 201)
        throw new Error(`POST /v1/leads answered ${response.status}: ${await response.text()}`);
      return ((await response.json()) as { id: string }).id;
    },
    async admin(path, init = {}) {
      const token = init.token ?? (init.user ? await ws.tokenFor(init.user) : ws.staffToken);
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      const query = init.sandbox ? '?sandbox=true' : '';
      return app.request(`/admin/v1/workspaces/${init.workspace ?? ws.workspace.slug}${path}${query}`, {
        method: init.method ?? 'GET',
        headers,
        ...(init.json !== undefined ? { json: init.json } : {}),
      });
    },
    async convert(leadId, sandbox = false) {
      const response = await fixture.admin(`/leads/${leadId}/convert`, { method: 'POST', sandbox });
      if (response.status !== 201) throw new Error(`convert answered ${response.status}: ${await response.text()}`);
      return (await response.json()) as AdminApplication;
    },
    stream: (id) => app.services.store.readStream(`application-${id}`),
  };
  return fixture;
}

/** The ApplicationStatus fields of an admin view or an event payload. */
export function statusFields(value: Record<string, unknown>): Record<string, unknown> {
  const keys = [
    'id',
    'reference',
    'case_ref',
    'stage',
    'progress',
    'status',
    'outcome',
    'module',
    'modules',
    'current_module',
    'module_progress',
  ];
  return Object.fromEntries(keys.map((k) => [k, value[k]]));
}
