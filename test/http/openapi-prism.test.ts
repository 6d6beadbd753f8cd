import t, { type Test } from 'tap';
import { seedWorkspace, startApp, type SeededWorkspace, type TestApp } from '../support/app.js';
import { startPrismProxy, type PrismProxy } from '../support/prism.js';
import { rawRequest } from '../support/raw-http.js';

const ADMIN_TOKEN = 'admin-token-for-openapi-prism-0123456789';
const UNKNOWN_ID = '0190a5c4-8c1e-7000-8000-000000000001';
const LEAD = { full_name: 'Prism Checked', email: 'prism.checked@example.org', consent: true, visa_type: 'student' };

/** One request sent through a proxy, and what the answer and Prism said. */
interface Exchange {
  what: string;
  status: number;
  /** Prism's `sl-violations` entries about the answer (any severity), and its own VIOLATIONS error, if any. */
  responseViolations: unknown[];
  body: string;
}

interface Sent {
  what: string;
  path: string;
  init?: RequestInit;
}

/** Sends a request through Prism and collects what Prism found wrong with the service's answer. */
async function exchange(proxy: PrismProxy, sent: Sent): Promise<Exchange> {
  const response = await fetch(proxy.baseUrl + sent.path, { ...sent.init, redirect: 'manual' });
  const header = response.headers.get('sl-violations');
  const violations = header ? (JSON.parse(header) as { location?: string[] }[]) : [];
  const responseViolations: unknown[] = violations.filter((v) => v.location?.[0] === 'response');
  const body = await response.text();
  // --errors: an answer that breaks the document is replaced by Prism's own problem+json.
  if ((response.headers.get('content-type') ?? '').startsWith('application/problem+json'))
    responseViolations.push(JSON.parse(body));
  return { what: sent.what, status: response.status, responseViolations, body };
}

async function expectConforming(t: Test, proxy: PrismProxy, sent: Sent, status: number): Promise<void> {
  const result = await exchange(proxy, sent);
  t.same(result.responseViolations, [], `${sent.what}: the answer is what the document says`);
  t.equal(result.status, status, `${sent.what}: ${status} (${result.body.slice(0, 300)})`);
}

const json = (key: string | undefined, body: unknown, method = 'POST', extra: Record<string, string> = {}) => ({
  method,
  headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), 'content-type': 'application/json', ...extra },
  body: JSON.stringify(body),
});
const get = (key?: string, extra: Record<string, string> = {}) => ({
  headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...extra },
});

async function createdLead(api: TestApp, ws: SeededWorkspace): Promise<string> {
  const created = await api.request('/v1/leads', { method: 'POST', key: ws.live, json: { ...LEAD, email: 'a@x.org' } });
  return ((await created.json()) as { id: string }).id;
}

/** Valid and refused requests to every public operation, with the status each must get. */
async function publicRequests(api: TestApp, ws: SeededWorkspace, served = true): Promise<[Sent, number][]> {
  const leadId = served ? await createdLead(api, ws) : UNKNOWN_ID;
  const k = ws.live;
  return [
    [{ what: 'a new lead', path: '/v1/leads', init: json(k, LEAD) }, 201],
    [{ what: 'the same person again', path: '/v1/leads', init: json(k, LEAD) }, 200],
    [{ what: 'a lead without consent', path: '/v1/leads', init: json(k, { ...LEAD, consent: false }) }, 400],
    [{ what: 'a lead missing its fields', path: '/v1/leads', init: json(k, { unknown: 1 }) }, 400],
    [{ what: 'a body past the limit', path: '/v1/leads', init: json(k, { ...LEAD, note: 'x'.repeat(70_000) }) }, 413],
    [
      {
        what: 'a text/plain body',
        path: '/v1/leads',
        init: { method: 'POST', headers: { authorization: `Bearer ${k}`, 'content-type': 'text/plain' }, body: 'hi' },
      },
      415,
    ],
    [
      { what: 'a compressed body', path: '/v1/leads', init: json(k, LEAD, 'POST', { 'content-encoding': 'gzip' }) },
      415,
    ],
    [{ what: 'a public key without Origin', path: '/v1/leads', init: json(ws.publicLive, LEAD) }, 403],
    [{ what: 'an unknown key', path: '/v1/leads', init: json('key_live_0123456789abcdef0123456789abcdef', LEAD) }, 401],
    [{ what: 'a page of leads', path: '/v1/leads?limit=2', init: get(k) }, 200],
    [{ what: 'a page of zero', path: '/v1/leads?limit=0', init: get(k) }, 400],
    [{ what: 'a made-up cursor', path: '/v1/leads?cursor=abc', init: get(k) }, 400],
    [{ what: 'a public key listing leads', path: '/v1/leads', init: get(ws.publicLive) }, 403],
    [{ what: 'a lead', path: `/v1/leads/${leadId}`, init: get(k) }, 200],
    [{ what: 'an unknown lead', path: `/v1/leads/${UNKNOWN_ID}`, init: get(k) }, 404],
    [{ what: 'a malformed lead id', path: '/v1/leads/not-an-id', init: get(k) }, 404],
    [{ what: 'a path segment past 100 characters', path: `/v1/leads/${'a'.repeat(150)}`, init: get(k) }, 414],
    [{ what: 'a lead updated', path: `/v1/leads/${leadId}`, init: json(k, { temperature: 'hot' }, 'PATCH') }, 200],
    [{ what: 'a lead update refused', path: `/v1/leads/${leadId}`, init: json(k, { stage: 'nope' }, 'PATCH') }, 400],
    [{ what: 'an empty update body', path: `/v1/leads/${leadId}`, init: { ...json(k, {}, 'PATCH'), body: '' } }, 400],
    [{ what: 'an unknown application', path: `/v1/applications/${UNKNOWN_ID}/status`, init: get(k) }, 404],
    [{ what: 'the webhook endpoints', path: '/v1/webhooks', init: get(k) }, 200],
    [{ what: 'a webhook endpoint refused', path: '/v1/webhooks', init: json(k, { url: 'ftp://x', events: [] }) }, 400],
    [
      {
        what: 'an unknown endpoint deleted',
        path: `/v1/webhooks/${UNKNOWN_ID}`,
        init: { ...get(k), method: 'DELETE' },
      },
      404,
    ],
    [
      {
        what: 'a delete with a text body',
        path: `/v1/webhooks/${UNKNOWN_ID}`,
        init: { method: 'DELETE', headers: { authorization: `Bearer ${k}`, 'content-type': 'text/plain' }, body: 'x' },
      },
      415,
    ],
    [
      {
        what: 'the form configuration',
        path: `/v1/widget/config?key=${ws.publicLive}`,
        init: get(undefined, { origin: 'https://www.example.com' }),
      },
      200,
    ],
    [
      {
        what: 'the form configuration with a secret key',
        path: `/v1/widget/config?key=${k}`,
        init: get(undefined, { origin: 'https://www.example.com' }),
      },
      403,
    ],
    [{ what: 'the custom fields', path: '/v1/meta/fields', init: get(k) }, 200],
  ];
}

t.test('every public operation answers what /openapi.json declares, through prism proxy --errors', async (t) => {
  const api = await startApp(t, { config: { adminToken: ADMIN_TOKEN } });
  const ws = await seedWorkspace(api);
  const prism = await startPrismProxy(t, api.app.swagger(), api.baseUrl);
  for (const [sent, status] of await publicRequests(api, ws)) await expectConforming(t, prism, sent, status);

  // Prism answers a request without credentials itself under --errors; without it, the service's answer is checked.
  const lenient = await startPrismProxy(t, api.app.swagger(), api.baseUrl, { errors: false });
  await expectConforming(t, lenient, { what: 'no key', path: '/v1/leads', init: json(undefined, LEAD) }, 401);

  // A read model the operation needs is gone: the last-resort 500.
  await api.pool.query('ALTER TABLE leads RENAME TO leads_away');
  await expectConforming(
    t,
    prism,
    { what: 'a broken read model', path: `/v1/leads/${UNKNOWN_ID}`, init: get(ws.test) },
    500,
  );

  // The failed-authentication limit: unknown keys from one address until it answers 429.
  let last: Exchange | undefined;
  for (let i = 0; i < 60 && last?.status !== 429; i++)
    last = await exchange(prism, {
      what: `unknown key ${i}`,
      path: '/v1/meta/fields',
      init: get(`key_live_${String(i).padStart(32, '0')}`),
    });
  t.equal(last?.status, 429, 'the failed-authentication limit answers 429');
  t.same(last?.responseViolations, [], 'as the document says');
});

t.test('load shedding answers every operation with the 503 the document declares', async (t) => {
  // No request may wait for a database connection: under-pressure sheds everything.
  const api = await startApp(t, { config: { maxPoolWaiting: 0 } });
  const ws = await seedWorkspace(api);
  const prism = await startPrismProxy(t, api.app.swagger(), api.baseUrl);
  for (const [sent, status] of await publicRequests(api, ws, false))
    // The router refuses a path segment past its limit before any hook runs.
    await expectConforming(t, prism, sent, status === 414 ? 414 : 503);
});

void rawRequest;
