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

/**
 * Writes `n` deliveries of an endpoint straight into the delivery log (as the workers would have left them; no
 * worker runs): event kinds in turn, and by `i % 4` one succeeded at its first attempt (HTTP 200), one failed for
 * good after three refused connections, one not tried yet, one retrying after two HTTP 503s. Created a minute apart,
 * the newest first (i = 0 is the newest). Returns the ids in that order.
 */
export async function seedDeliveries(
  pool: TestApp['pool'],
  o: { tenantId: string; endpointId: string; n: number; now: Date; error?: string },
): Promise<string[]> {
  const made = await pool.query<{ id: string }>(
    `WITH made AS (
       SELECT g, gen_random_uuid() AS id, (ARRAY['document.uploaded','document.rejected','task.overdue'])[1 + g % 3] AS kind,
              (ARRAY['succeeded','failed','pending','pending'])[1 + g % 4] AS status,
              (ARRAY[1, 3, 0, 2])[1 + g % 4] AS attempts,
              $4::timestamptz - g * interval '1 minute' AS at
         FROM generate_series(0, $3::int - 1) g),
     deliveries AS (
       INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, sandbox, event_type, body, status, attempts,
                                       next_attempt_at, last_response_status, last_error, created_at, updated_at)
       SELECT id, gen_random_uuid(), $2, $1, false, kind, json_build_object('type', kind, 'n', g)::text, status, attempts,
              CASE WHEN g % 4 = 3 THEN $4::timestamptz + interval '1 hour' WHEN g % 4 = 2 THEN at END,
              CASE g % 4 WHEN 0 THEN 200 WHEN 3 THEN 503 END, CASE WHEN g % 4 = 1 THEN $5::text END,
              at, at + interval '30 seconds'
         FROM made ORDER BY g
       RETURNING id),
     attempts AS (
       INSERT INTO webhook_delivery_attempts (delivery_id, attempt, attempted_at, request_headers, response_status,
                                              response_body, duration_ms, error)
       SELECT m.id, k, m.at + k * interval '5 seconds', '{}'::jsonb,
              CASE m.g % 4 WHEN 0 THEN 200 WHEN 3 THEN 503 END, CASE WHEN m.g % 4 = 3 THEN 'try later' END, 12,
              CASE WHEN m.g % 4 = 1 THEN $5::text END
         FROM made m, generate_series(1, m.attempts) k
       RETURNING 1)
     SELECT id FROM made ORDER BY g`,
    [o.tenantId, o.endpointId, o.n, o.now, o.error ?? 'ECONNREFUSED'],
  );
  return made.rows.map((r) => r.id);
}

/**
 * A live endpoint made through the API (the app must allow loopback addresses: nothing is sent, no worker runs)
 * with `n` deliveries in its log (seedDeliveries). Its id.
 */
export async function endpointWithDeliveries(
  app: TestApp,
  ws: { live: string; workspace: Workspace },
  n = 4,
): Promise<string> {
  const response = await app.request('/v1/webhooks', {
    method: 'POST',
    key: ws.live,
    json: { url: 'https://127.0.0.1:9/crawled', events: ['lead.created', 'document.uploaded'] },
  });
  if (response.status !== 201)
    throw new Error(`POST /v1/webhooks answered ${response.status}: ${await response.text()}`);
  const { id } = (await response.json()) as { id: string };
  await seedDeliveries(app.pool, { tenantId: ws.workspace.id, endpointId: id, n, now: app.services.now() });
  return id;
}
