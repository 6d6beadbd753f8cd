import type { Role } from '../../../src/identity/permissions.js';
import type { MemberView } from '../../../src/console/context.js';
import type { TestApp } from '../../support/app.js';
import type { Workspace } from '../../../src/workspaces/workspace.js';
import { memberOf } from '../../identity/support.js';

/** The member in view a list's queries read (no session: the queries and cells need only these parts). */
export function viewAs(workspace: Workspace, role: Role): MemberView {
  const member = workspace.settings.users.find((u) => u.email === memberOf(role))!;
  return {
    workspace,
    member,
    role,
    signedIn: { csrf: 'test-csrf' } as MemberView['signedIn'],
    frame: (title) => ({ title }),
  };
}

/** Captures one lead through the API; its id. */
export async function capture(app: TestApp, key: string, lead: Record<string, unknown>): Promise<string> {
  const response = await app.request('/v1/leads', { method: 'POST', key, json: { consent: true, ...lead } });
  if (response.status !== 201) throw new Error(`capture answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { id: string }).id;
}

/**
 * Copies a lead's read-model row `n` times straight into the leads table (the lists read only that table): names
 * from a small set (ties on purpose), the pipeline's stages in turn, creation and change times a few minutes apart
 * (ties again), half without an owner. Returns nothing; the rows are the workspace's, live.
 */
export async function copyLeads(app: TestApp, templateId: string, n: number, prefix = 'Copy'): Promise<void> {
  await app.pool.query(
    `WITH made AS (SELECT gen_random_uuid() AS nid, g FROM generate_series(1, $2::int) g)
     INSERT INTO leads (id, tenant_id, sandbox, revision, phone, email, branch_id, owner_id, converted,
                        created_at, updated_at, body)
     SELECT m.nid, l.tenant_id, false, 1, NULL, NULL, l.branch_id,
            CASE WHEN m.g % 2 = 0 THEN NULL ELSE l.owner_id END, false,
            l.created_at - (m.g % 7) * interval '1 minute', l.updated_at - (m.g % 5) * interval '1 minute',
            (jsonb_set(jsonb_set(jsonb_set(jsonb_set(jsonb_set(l.body::jsonb,
              '{id}', to_jsonb(m.nid::text)),
              '{full_name}', to_jsonb($3::text || ' ' || chr(65 + (m.g % 13)::int))),
              '{phone}', 'null'::jsonb), '{email}', 'null'::jsonb),
              '{stage}', (ARRAY['{"key":"new","name":"New"}','{"key":"contacted","name":"Contacted"}',
                                '{"key":"qualified","name":"Qualified"}']::jsonb[])[1 + m.g % 3])
            || jsonb_build_object('owner', CASE WHEN m.g % 2 = 0 THEN NULL ELSE l.body::jsonb->'owner' END))::json
       FROM leads l, made m WHERE l.id = $1`,
    [templateId, n, prefix],
  );
}
