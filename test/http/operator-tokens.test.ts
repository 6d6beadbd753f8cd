import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { generateKey } from '../../src/keys/api-key.js';
import { seedWorkspace, startApp } from '../support/app.js';

const ADMIN = 'admin-token-of-operator-tests-0123456789';
const METRICS = 'metrics-token-of-operator-tests-0123456789';
const LIMIT = { capacity: 30, refill_per_second: 0.001 };

t.test('an operator token shorter than 32 characters is refused at start-up with the reason', async (t) => {
  for (const name of ['ADMIN_TOKEN', 'METRICS_TOKEN'] as const) {
    const short = 'x'.repeat(31);
    const error = t.throws(() => loadConfig({ [name]: short }), {
      message: new RegExp(`^${name} must be at least 32 characters long: a shorter token could be guessed`),
    }) as Error;
    t.notMatch(error.message, short, 'the value is not repeated');
    t.throws(() => loadConfig({ [name]: `${'x'.repeat(20)} ${'y'.repeat(20)}` }), {
      message: `${name} must not contain white space: it is sent as \`Authorization: Bearer <token>\``,
    });
    const field = name === 'ADMIN_TOKEN' ? 'adminToken' : 'metricsToken';
    t.equal(loadConfig({ [name]: 'z'.repeat(32) })[field], 'z'.repeat(32), '32 characters are enough');
    t.equal(loadConfig({ [name]: '' })[field], undefined, 'empty: off');
  }
});

t.test('wrong admin and metrics tokens count toward the failed-authentication limit', async (t) => {
  const api = await startApp(t, { config: { adminToken: ADMIN, metricsToken: METRICS, authFailureLimit: LIMIT } });
  const ws = await seedWorkspace(api);
  // ADMIN_TOKEN opens the operator's one route (creating a workspace); an empty definition is refused after it.
  const admin = (token?: string) =>
    api.request('/admin/v1/workspaces', {
      method: 'POST',
      json: {},
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
  const metrics = (token: string) => api.request('/metrics', { headers: { authorization: `Bearer ${token}` } });
  const statuses = async (responses: Promise<Response>[]) => {
    const out: number[] = [];
    for (const pending of responses) {
      const response = await pending;
      out.push(response.status);
      await response.arrayBuffer();
    }
    return out;
  };

  t.same(await statuses([admin(), admin(), metrics('')]), [401, 401, 401], 'a missing token is refused, not counted');
  const wrongAdmin = await statuses(
    Array.from({ length: 20 }, (_, i) => admin(`${ADMIN.slice(0, -1)}${'abcdefghij'[i % 10]}`)),
  );
  t.same(wrongAdmin, Array(20).fill(401), 'wrong admin tokens: 401');
  const wrongMetrics = await statuses(Array.from({ length: 10 }, () => metrics(`${METRICS}x`)));
  t.same(wrongMetrics, Array(10).fill(401), 'wrong metrics tokens: 401, in the same budget');

  const refused = await admin(`${ADMIN}x`);
  t.equal(refused.status, 429, 'the 31st wrong token is refused for the address');
  t.match(await refused.json(), { error: 'rate_limited', scope: 'failed_authentication', retry_after: Number });
  t.ok(refused.headers.get('retry-after'), 'with Retry-After');
  const refusedMetrics = await metrics(`${METRICS}y`);
  t.equal(refusedMetrics.status, 429);
  t.match(await refusedMetrics.json(), { error: 'rate_limited', scope: 'failed_authentication' });
  t.equal((await api.request('/v1/leads', { key: generateKey('secret', 'live') })).status, 429, 'and unknown keys');

  t.equal((await admin(ADMIN)).status, 400, 'the right admin token is still served (its empty definition refused)');
  const staff = await api.request(`/admin/v1/workspaces/${ws.workspace.slug}/webhooks`, {
    headers: { authorization: `Bearer ${ws.staffToken}` },
  });
  t.equal(staff.status, 200, "and a member's access token");
  t.equal((await metrics(METRICS)).status, 200, 'and so is the right metrics token');
  t.equal((await api.request('/v1/leads', { key: ws.live })).status, 200, 'and a valid key');
});
