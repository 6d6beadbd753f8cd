import t from 'tap';
import { seedWorkspace, startApp } from '../support/app.js';

t.test('each kind of bad request gets the Error body, the right status and no internals', async (t) => {
  const api = await startApp(t);
  const ws = await seedWorkspace(api);
  const check = async (response: Response, status: number, error: string) => {
    const text = await response.text();
    t.equal(response.status, status, `${error} → ${status}`);
    const body = JSON.parse(text) as Record<string, unknown>;
    t.match(body, { error, message: String, request_id: /^req_[0-9a-f]{24}$/ }, `${error}: Error body`);
    t.equal(body.request_id, response.headers.get('request-id'), 'the request id is also a header');
    t.notMatch(text, /at .*\.(ts|js):\d+|stack|node_modules|relation|SELECT|pg_/i, `${error}: no internals`);
    return body;
  };

  await check(await api.request('/v1/leads', { key: ws.live, method: 'POST', body: '{"full_name": "x",', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
  await check(await api.request('/v1/leads', { key: ws.live, method: 'POST', body: '', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
  await check(await api.request('/v1/leads', { key: ws.live, method: 'POST', body: 'full_name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415, 'unsupported_media_type');
  await check(await api.request('/v1/leads', { key: ws.live, method: 'POST', json: { full_name: 'x'.repeat(70_000), consent: true, email: 'a@b.co' } }), 413, 'payload_too_large');
  await check(await api.request('/v1/nowhere', { key: ws.live }), 404, 'not_found');
  await check(await api.request('/v1/leads', { key: ws.live, method: 'PUT', json: {} }), 404, 'not_found');

  const invalid = await check(await api.request('/v1/leads?limit=500&updated_since=yesterday', { key: ws.live }), 400, 'validation_failed');
  t.match(invalid.fields, { limit: String, updated_since: String }, 'fields names each bad query parameter');
  await check(await api.request('/v1/leads/not-a-uuid', { key: ws.live }), 404, 'not_found');
  const badBody = await check(await api.request('/v1/leads', { key: ws.live, method: 'POST', json: { full_name: '', email: 'a@b.co', consent: true, shoe_size: 9 } }), 400, 'validation_failed');
  t.match(badBody.fields, { full_name: String, shoe_size: String }, 'each invalid or unknown field is named');

  // An unexpected failure: the read model vanishes under the running service.
  await api.pool.query('ALTER TABLE leads RENAME TO leads_gone');
  const crashed = await check(await api.request('/v1/leads', { key: ws.live }), 500, 'internal_error');
  t.notMatch(JSON.stringify(crashed), /leads_gone|does not exist/, 'the database error stays in the log');
  await api.pool.query('ALTER TABLE leads_gone RENAME TO leads');
});
