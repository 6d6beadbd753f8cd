import t from 'tap';
import { seedWorkspace } from '../support/app.js';
import { appFixture, fixtureFor, statusFields } from './support.js';

const STATUS_KEYS = [
  'case_ref',
  'current_module',
  'id',
  'module',
  'module_progress',
  'modules',
  'outcome',
  'progress',
  'reference',
  'stage',
  'status',
];

t.test('GET /v1/applications/{id}/status', async (t) => {
  const f = await appFixture(t);
  const leadId = await f.lead();
  const view = await f.convert(leadId);

  const response = await f.app.request(`/v1/applications/${view.id}/status`, { key: f.ws.live });
  t.equal(response.status, 200);
  t.ok(response.headers.get('ratelimit-limit'), 'rate-limit headers on the answer');
  const body = (await response.json()) as Record<string, unknown>;
  t.same(Object.keys(body).sort(), STATUS_KEYS, 'exactly the ApplicationStatus fields');
  t.same(body, statusFields(view as unknown as Record<string, unknown>), 'the same status the admin interface shows');
  t.match(body, {
    id: view.id,
    reference: /^APP-\d+$/,
    stage: { key: 'profile', name: 'Profile', position: 0 },
    progress: 0,
    status: 'active',
    outcome: null,
    module: { key: 'profile_review', name: 'Profile review' },
    current_module: { key: 'profile_review', name: 'Profile review' },
    module_progress: { updated: 0, total: 4 },
  });
  t.equal(body.reference, body.case_ref, 'reference is an alias of case_ref');

  // After staff work, the endpoint answers the new state at once.
  await f.admin(`/applications/${view.id}/modules/profile_review/state`, { method: 'PUT', json: { state: 'updated' } });
  const after = (await (
    await f.app.request(`/v1/applications/${view.id}/status`, { key: f.ws.live })
  ).json()) as Record<string, unknown>;
  t.match(after, {
    stage: { key: 'documents', position: 1 },
    progress: 25,
    module_progress: { updated: 1, total: 4 },
    current_module: { key: 'documents' },
  });

  const openapi = (await (await f.app.request('/openapi.json')).json()) as {
    paths: Record<string, Record<string, { tags?: string[] }>>;
  };
  t.ok(openapi.paths['/v1/applications/{id}/status']?.get, 'the endpoint is in the OpenAPI document');
  t.notOk(
    openapi.paths['/admin/v1/workspaces/{workspace}/leads/{leadId}/convert'],
    'the admin interface is not: it has a document of its own',
  );
  const admin = (await (await f.app.request('/admin/openapi.json')).json()) as typeof openapi;
  t.same(
    admin.paths['/admin/v1/workspaces/{workspace}/leads/{leadId}/convert']?.post?.tags,
    ['applications'],
    'the conversion is in the admin document',
  );
});

t.test("404 for unknown ids, another workspace's application and the other mode; key checks", async (t) => {
  const f = await appFixture(t);
  const live = await f.convert(await f.lead());
  const sandbox = await f.convert(await f.lead(f.ws.test), true);
  t.equal(sandbox.sandbox, true);

  const other = fixtureFor(f.app, await seedWorkspace(f.app));
  const theirs = await other.convert(await other.lead());

  const status = async (id: string, key: string) => {
    const response = await f.app.request(`/v1/applications/${id}/status`, { key });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const notFound = { status: 404, body: { error: 'not_found', request_id: /^req_/ } };
  t.match(await status('6f1c1d3e-2b7a-4c1e-9f00-000000000000', f.ws.live), notFound, 'unknown id');
  t.match(await status('not-a-uuid', f.ws.live), notFound, 'an id that is not a uuid');
  t.match(await status(theirs.id, f.ws.live), notFound, "another workspace's application");
  t.equal((await status(theirs.id, other.ws.live)).status, 200, 'its own workspace reads it');
  t.match(await status(sandbox.id, f.ws.live), notFound, 'a live key does not see sandbox applications');
  t.match(await status(live.id, f.ws.test), notFound, 'a test key does not see live applications');
  t.match(
    await status(sandbox.id, f.ws.test),
    { status: 200, body: { id: sandbox.id, case_ref: 'APP-1' } },
    'a test key reads the sandbox; numbering is per mode',
  );
  t.match(await status(live.id, f.ws.live), { status: 200, body: { case_ref: 'APP-1' } });

  const noScope = await f.ws.key({ scopes: ['leads:read'] });
  t.match(await status(live.id, noScope.value), {
    status: 403,
    body: { error: 'insufficient_scope', required: 'applications:read' },
  });
  t.match(
    await status(live.id, f.ws.publicLive),
    { status: 403, body: { error: 'insufficient_scope' } },
    'public keys cannot read applications',
  );
  const anonymous = await f.app.request(`/v1/applications/${live.id}/status`);
  t.equal(anonymous.status, 401);
});
