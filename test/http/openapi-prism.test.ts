import t, { type Test } from 'tap';
import { seedWorkspace, startApp, type SeededWorkspace, type TestApp } from '../support/app.js';
import { operationsOf, servedDocument, type OpenApiDocument } from '../support/openapi.js';
import { startPrismProxy, type PrismProxy } from '../support/prism.js';
import { rawRequest } from '../support/raw-http.js';

const ADMIN_TOKEN = 'admin-token-for-openapi-prism-0123456789';
/** A small real PDF, ASCII only (Prism forwards a multipart body as text). */
const PDF = '%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n';
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
const post = (key: string, extra: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, ...extra },
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
    [{ what: 'a page of events', path: '/v1/events?limit=2&types=lead.*', init: get(k) }, 200],
    [
      { what: 'events oldest first', path: '/v1/events?order=asc&created[gte]=2026-01-01T00:00:00Z', init: get(k) },
      200,
    ],
    [{ what: 'an unknown event kind', path: '/v1/events?types=lead.exploded', init: get(k) }, 400],
    [{ what: 'an unknown event', path: `/v1/events/${UNKNOWN_ID}`, init: get(k) }, 404],
    [{ what: 'events with a public key', path: '/v1/events', init: get(ws.publicLive) }, 403],
    [{ what: 'deliveries of an unknown endpoint', path: `/v1/webhooks/${UNKNOWN_ID}/deliveries`, init: get(k) }, 404],
    [{ what: 'a ping of an unknown endpoint', path: `/v1/webhooks/${UNKNOWN_ID}/test`, init: post(k) }, 404],
    [
      {
        what: 'a ping with a malformed Idempotency-Key',
        path: `/v1/webhooks/${UNKNOWN_ID}/test`,
        init: post(k, { 'idempotency-key': 'has spaces' }),
      },
      400,
    ],
    [
      { what: 'deliveries from number 0', path: `/v1/webhooks/${UNKNOWN_ID}/deliveries?sequence_gte=0`, init: get(k) },
      400,
    ],
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

  // The failed-authentication limit: unknown keys from one address until it answers 429; every answer on the way
  // (401s, then 429s) is what the document says.
  const storm: Exchange[] = [];
  for (let i = 0; i < 60 && storm.at(-1)?.status !== 429; i++)
    storm.push(
      await exchange(prism, {
        what: `unknown key ${i}`,
        path: '/v1/meta/fields',
        init: get(`key_live_${String(i).padStart(32, '0')}`),
      }),
    );
  t.equal(storm.at(-1)?.status, 429, 'the failed-authentication limit answers 429');
  t.same(
    storm.flatMap((e) => e.responseViolations),
    [],
    `${storm.length} answers to unknown keys, as the document says`,
  );
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

t.test('the admin operations answer what /admin/openapi.json declares, through prism proxy --errors', async (t) => {
  const api = await startApp(t, { config: { adminToken: ADMIN_TOKEN } });
  const ws = await seedWorkspace(api);
  const leadId = await createdLead(api, ws);
  const admin = (await servedDocument(api, '/admin/openapi.json')) as unknown;
  const prism = await startPrismProxy(t, admin, api.baseUrl);
  const base = `/admin/v1/workspaces/${ws.workspace.slug}`;
  const token = ws.staffToken;
  const asStaff = (body?: unknown, method = 'POST') => (body === undefined ? get(token) : json(token, body, method));
  const due = '2026-12-01T10:00:00.000Z';
  const requests: [Sent, number][] = [
    [{ what: 'a task', path: `${base}/tasks`, init: asStaff({ lead_id: leadId, title: 'Call', due_at: due }) }, 201],
    [{ what: 'a task refused', path: `${base}/tasks`, init: asStaff({ title: '' }) }, 400],
    [{ what: 'the tasks', path: `${base}/tasks`, init: asStaff() }, 200],
    [{ what: 'an unknown task', path: `${base}/tasks/${UNKNOWN_ID}`, init: asStaff() }, 404],
    [{ what: 'a task id past 100 characters', path: `${base}/tasks/${'a'.repeat(150)}`, init: asStaff() }, 414],
    [{ what: 'a body past the limit', path: `${base}/tasks`, init: asStaff({ title: 'x'.repeat(70_000) }) }, 413],
    [{ what: 'the documents', path: `${base}/documents`, init: asStaff() }, 200],
    [{ what: 'the webhook endpoints', path: `${base}/webhooks`, init: asStaff() }, 200],
    [{ what: "a lead's history", path: `${base}/leads/${leadId}/history`, init: asStaff() }, 200],
    [{ what: 'a wrong access token', path: `${base}/tasks`, init: get('not-an-access-token') }, 401],
    [
      {
        what: "an inactive member's token",
        path: `${base}/tasks`,
        init: get(await ws.tokenFor('former@northstar.example')),
      },
      403,
    ],
    [{ what: 'an unknown workspace', path: '/admin/v1/workspaces/nowhere/tasks', init: asStaff() }, 404],
  ];
  for (const [sent, status] of requests) await expectConforming(t, prism, sent, status);

  // A case opened from the lead, and a converted lead converted again.
  const convert = { what: 'a lead converted', path: `${base}/leads/${leadId}/convert`, init: asStaff({}) };
  await expectConforming(t, prism, { ...convert, init: { ...convert.init, body: undefined } }, 201);
  await expectConforming(
    t,
    prism,
    { ...convert, what: 'converted again', init: { ...convert.init, body: undefined } },
    409,
  );

  // An upload while no clamd answers (the test app's scanner socket does not exist): it waits for its scan.
  const form = new FormData();
  form.set('lead_id', leadId);
  form.set('type', 'passport');
  form.set('file', new Blob([PDF], { type: 'application/pdf' }), 'passport.pdf');
  const upload = await exchange(prism, {
    what: 'an upload',
    path: `${base}/documents`,
    init: { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form },
  });
  t.same(upload.responseViolations, [], 'an upload: the answer is what the document says');
  t.equal(upload.status, 202, `an upload waits for its scan (${upload.body.slice(0, 200)})`);
  const documentId = (JSON.parse(upload.body) as { id: string }).id;
  await expectConforming(
    t,
    prism,
    { what: 'a pending download', path: `${base}/documents/${documentId}/content`, init: asStaff() },
    409,
  );
  await expectConforming(
    t,
    prism,
    {
      what: 'a pending document rejected',
      path: `${base}/documents/${documentId}/reject`,
      init: asStaff({ reason: 'blurred' }),
    },
    409,
  );
  await expectConforming(t, prism, { what: 'the export', path: `${base}/export`, init: asStaff() }, 200);
});

t.test('what Node refuses before Prism could forward it is declared too (431, 417)', async (t) => {
  // Prism is a Node server with the same 16 KB header limit and the same Expect handling: it would answer these
  // itself, so they are sent to the service directly and checked against the document.
  const api = await startApp(t);
  const document = api.app.swagger() as unknown as OpenApiDocument;
  const port = Number(new URL(api.baseUrl).port);
  const cases = [
    ['431', `GET /v1/leads HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`],
    ['417', 'GET /v1/leads HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\n\r\n'],
  ] as const;
  for (const [status, bytes] of cases) {
    const answer = await rawRequest(port, bytes);
    t.equal(String(answer.status), status, `${status} answered`);
    t.match(JSON.parse(answer.body), { error: String, message: String, request_id: /^req_/ }, 'in the Error shape');
    const undeclared = operationsOf(document).filter(({ operation }) => !operation.responses[status]);
    t.same(undeclared, [], `every operation declares ${status}`);
  }
});

t.test('every operation of both documents declares what the edges answer, in the Error shape', async (t) => {
  const api = await startApp(t, { config: { adminToken: ADMIN_TOKEN } });
  const documents = [
    api.app.swagger(),
    await servedDocument(api, '/admin/openapi.json'),
  ] as unknown as OpenApiDocument[];
  const errorShape = { required: ['error', 'message', 'request_id'], additionalProperties: false };
  let checked = 0;
  for (const document of documents)
    for (const { method, path, operation } of operationsOf(document)) {
      const expected = ['400', '408', '417', '431', '500', '503'];
      if (path.includes('{')) expected.push('404', '414');
      if (['post', 'put', 'patch', 'delete'].includes(method)) expected.push('413', '415');
      if (path.startsWith('/v1/')) expected.push('401', '402', '403', '429');
      else expected.push('401', '429');
      const responses = operation.responses as Record<string, { content?: Record<string, { schema: unknown }> }>;
      const missing = expected.filter((status) => !responses[status]);
      t.same(missing, [], `${method.toUpperCase()} ${path} declares ${expected.join(', ')}`);
      for (const [status, response] of Object.entries(responses))
        if (Number(status) >= 400)
          t.match(
            response.content?.['application/json']?.schema,
            errorShape,
            `${method} ${path} ${status} is an Error`,
          );
      checked += 1;
    }
  t.ok(checked > 40, `${checked} operations checked`);
});
