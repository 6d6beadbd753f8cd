import t from 'tap';
import { can, ROLES } from '../../src/identity/permissions.js';
import { seedWorkspace } from '../support/app.js';
import { everyRole, memberOf } from '../identity/support.js';
import { webhookHarness } from './support/harness.js';

// PATCH /admin/v1/workspaces/:workspace/webhooks/{id}: the payload version and the rate, by the roles the permission
// table allows (`webhooks.manage`), in the Error shape otherwise, and only in the workspace the path names.

t.test('the admin interface changes the payload version and the rate, by role, in one workspace', async (t) => {
  const h = await webhookHarness(t, { definition: everyRole() });
  const live = await h.createEndpoint({ url: h.receiver.url(), events: ['lead.created'] });
  const test = await h.createEndpoint({ url: h.receiver.url(), events: ['lead.created'] }, h.ws.test);
  const path = (id: string, slug = h.ws.workspace.slug) => `/admin/v1/workspaces/${slug}/webhooks/${id}`;
  const patch = async (token: string, id: string, json: unknown, slug?: string) =>
    h.request(path(id, slug), { method: 'PATCH', headers: { authorization: `Bearer ${token}` }, json });
  const stored = async (id: string) =>
    (
      await h.pool.query<{ payload_version: string; rate_limit_per_second: number | null }>(
        'SELECT payload_version, rate_limit_per_second FROM webhook_endpoints WHERE id = $1',
        [id],
      )
    ).rows[0]!;

  const owner = h.ws.staffToken;
  const both = await patch(owner, live.id, { payload_version: '2026-11-22', rate_limit_per_second: 20 });
  t.equal(both.status, 200);
  t.match(await both.json(), { id: live.id, mode: 'live', payload_version: '2026-11-22', rate_limit_per_second: 20 });
  t.same(await stored(live.id), { payload_version: '2026-11-22', rate_limit_per_second: 20 });
  const ofTest = await patch(owner, test.id, { rate_limit_per_second: 3 });
  t.match(await ofTest.json(), { mode: 'test', rate_limit_per_second: 3 }, 'a test endpoint too, by its id');
  const removed = await patch(owner, live.id, { rate_limit_per_second: null });
  t.match(await removed.json(), { rate_limit_per_second: null, payload_version: '2026-11-22' }, 'null removes it');

  for (const [name, json, field] of [
    ['a rate of 0', { rate_limit_per_second: 0 }, 'rate_limit_per_second'],
    ['a rate of 1001', { rate_limit_per_second: 1001 }, 'rate_limit_per_second'],
    ['a rate of 1.5', { rate_limit_per_second: 1.5 }, 'rate_limit_per_second'],
    ['an unknown version', { payload_version: '2020-01-01' }, 'payload_version'],
    ['an unknown field', { url: 'https://example.com' }, 'url'],
  ] as const) {
    const refused = await patch(owner, live.id, json);
    const body = (await refused.json()) as { error: string; fields?: Record<string, string> };
    t.equal(refused.status, 400, `${name}: 400`);
    t.equal(body.error, 'validation_failed', name);
    t.ok(body.fields && field in body.fields, `${name}: fields names ${field} (${JSON.stringify(body.fields)})`);
  }
  t.same(await stored(live.id), { payload_version: '2026-11-22', rate_limit_per_second: null }, 'nothing refused kept');

  for (const role of ROLES) {
    const token = await h.ws.tokenFor(memberOf(role));
    const response = await patch(token, live.id, { rate_limit_per_second: 9 });
    if (can(role, 'webhooks.manage')) {
      t.equal(response.status, 200, `${role} may change it (webhooks.manage)`);
      t.equal((await stored(live.id)).rate_limit_per_second, 9);
      await patch(token, live.id, { rate_limit_per_second: null });
    } else {
      t.equal(response.status, 403, `${role} is refused (webhooks.manage is not theirs)`);
      t.type(((await response.json()) as { error: string }).error, 'string', `${role}: the Error shape`);
      t.equal((await stored(live.id)).rate_limit_per_second, null, `${role}: nothing changed`);
    }
  }

  const other = await seedWorkspace(h);
  const foreign = await patch(other.staffToken, live.id, { rate_limit_per_second: 1 }, other.workspace.slug);
  t.equal(foreign.status, 404, "another workspace's member does not find the endpoint under their workspace");
  t.equal(((await foreign.json()) as { error: string }).error, 'not_found');
  const notTheirs = await patch(other.staffToken, live.id, { rate_limit_per_second: 1 });
  t.not(notTheirs.status, 200, "nor under the endpoint's own workspace, which is not theirs");
  t.same(await stored(live.id), { payload_version: '2026-11-22', rate_limit_per_second: null }, 'and nothing changed');
});
