import fc from 'fast-check';
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config.js';
import { EVENT_DATA, envelopeComponent } from '../../src/http/schemas/event-data.js';
import { EVENT_KINDS } from '../../src/shared/enums.js';
import { startApp, type TestApp } from '../support/app.js';
import { operationsOf, redoclyFindings, servedDocument, type OpenApiDocument } from '../support/openapi.js';
import { checkProperty } from '../support/properties.js';

const ADMIN_TOKEN = 'admin-token-for-openapi-tests-0123456789';
// Not example.com: Redocly's recommended ruleset warns about servers there (no-server-example.com).
const BASE_URL = 'https://crm.visa-consultancy.test/api';

/** The operationIds integrators' generated clients are built on: renaming one breaks their code, so they are pinned. */
const PUBLIC_OPERATIONS: Record<string, string> = {
  'POST /v1/leads': 'createLead',
  'GET /v1/leads': 'listLeads',
  'GET /v1/leads/{id}': 'getLead',
  'PATCH /v1/leads/{id}': 'updateLead',
  'GET /v1/applications/{id}/status': 'getApplicationStatus',
  'GET /v1/webhooks': 'listWebhookEndpoints',
  'POST /v1/webhooks': 'createWebhookEndpoint',
  'DELETE /v1/webhooks/{id}': 'deleteWebhookEndpoint',
  'PATCH /v1/webhooks/{id}': 'updateWebhookEndpoint',
  'GET /v1/widget/config': 'getWidgetConfig',
  'GET /v1/meta/fields': 'getMetaFields',
  'GET /v1/events': 'listEvents',
  'GET /v1/events/{id}': 'getEvent',
  'GET /v1/webhooks/{id}/deliveries': 'listWebhookDeliveriesBySequence',
  'POST /v1/webhooks/{id}/test': 'sendWebhookEndpointTest',
  'POST /v1/webhooks/{id}/replay': 'replayWebhookEvents',
};

const WS = '/admin/v1/workspaces/{workspace}';
const ADMIN_OPERATIONS: Record<string, string> = {
  'POST /admin/v1/workspaces': 'createWorkspace',
  [`POST ${WS}/leads/{leadId}/convert`]: 'convertLead',
  [`POST ${WS}/leads/{leadId}/erase`]: 'eraseLead',
  [`GET ${WS}/applications/{id}`]: 'getApplication',
  [`GET ${WS}/leads/{leadId}/history`]: 'getLeadHistory',
  [`GET ${WS}/applications/{id}/history`]: 'getApplicationHistory',
  [`GET ${WS}/leads/{leadId}/state`]: 'getLeadAsOf',
  [`GET ${WS}/applications/{id}/state`]: 'getApplicationAsOf',
  [`GET ${WS}/export`]: 'exportWorkspaceLog',
  [`POST ${WS}/applications/{id}/stage`]: 'moveApplicationStage',
  [`POST ${WS}/applications/{id}/status`]: 'setApplicationStatus',
  [`POST ${WS}/applications/{id}/outcome`]: 'recordApplicationOutcome',
  [`POST ${WS}/applications/{id}/modules`]: 'addApplicationModule',
  [`PUT ${WS}/applications/{id}/modules/{module}/state`]: 'setApplicationModuleState',
  [`PATCH ${WS}/applications/{id}/modules/{module}`]: 'saveApplicationModuleDetails',
  [`POST ${WS}/applications/{id}/modules/{module}/select`]: 'selectApplicationModule',
  [`POST ${WS}/applications/{id}/modules/{module}/deselect`]: 'deselectApplicationModule',
  [`POST ${WS}/applications/{id}/modules/{module}/restore`]: 'restoreApplicationModule',
  [`POST ${WS}/tasks`]: 'createTask',
  [`GET ${WS}/tasks`]: 'listTasks',
  [`GET ${WS}/tasks/{id}`]: 'getTask',
  [`PATCH ${WS}/tasks/{id}`]: 'changeTask',
  [`POST ${WS}/tasks/{id}/complete`]: 'completeTask',
  [`POST ${WS}/tasks/{id}/reopen`]: 'reopenTask',
  [`POST ${WS}/invoices`]: 'issueInvoice',
  [`GET ${WS}/invoices`]: 'listInvoices',
  [`GET ${WS}/invoices/{id}`]: 'getInvoice',
  [`POST ${WS}/invoices/{id}/payments`]: 'recordPayment',
  [`POST ${WS}/invoices/{id}/payments/{paymentId}/refunds`]: 'createRefund',
  [`POST ${WS}/invoices/{id}/refunds/{refundId}/paid`]: 'markRefundPaid',
  [`POST ${WS}/documents`]: 'uploadDocument',
  [`GET ${WS}/documents`]: 'listDocuments',
  [`GET ${WS}/documents/{id}`]: 'getDocument',
  [`GET ${WS}/documents/{id}/content`]: 'downloadDocument',
  [`POST ${WS}/documents/{id}/reject`]: 'rejectDocument',
  [`GET ${WS}/webhooks`]: 'listWorkspaceWebhookEndpoints',
  [`PATCH ${WS}/webhooks/{id}`]: 'updateWorkspaceWebhookEndpoint',
  [`GET ${WS}/webhooks/{id}/deliveries`]: 'listWebhookDeliveries',
  [`POST ${WS}/webhooks/{id}/deliveries/{deliveryId}/resend`]: 'resendWebhookDelivery',
  [`POST ${WS}/webhooks/{id}/resume`]: 'resumeWebhookEndpoint',
  [`POST ${WS}/webhooks/{id}/rotate-secret`]: 'rotateWebhookSecret',
  [`POST ${WS}/webhooks/{id}/test`]: 'sendWebhookTest',
  [`POST ${WS}/webhooks/{id}/replay`]: 'replayWorkspaceWebhookEvents',
};

function operationIds(document: OpenApiDocument): Record<string, string | undefined> {
  return Object.fromEntries(
    operationsOf(document).map(({ method, path, operation }) => [
      `${method.toUpperCase()} ${path}`,
      operation.operationId,
    ]),
  );
}

async function documents(t: Test) {
  const api = await startApp(t, { config: { adminToken: ADMIN_TOKEN, publicBaseUrl: BASE_URL } });
  return {
    api,
    publicDoc: await servedDocument(api, '/openapi.json'),
    adminDoc: await servedDocument(api, '/admin/openapi.json'),
  };
}

/** The route a documented operation names exists in the app (OpenAPI `{id}` is fastify's `:id`). */
function isRoute(api: TestApp, method: string, path: string): boolean {
  return api.app.hasRoute({ method: method.toUpperCase() as 'GET', url: path.replace(/\{(\w+)\}/g, ':$1') });
}

t.test('both documents are clean under Redocly recommended, every finding of any severity', async (t) => {
  const { publicDoc, adminDoc } = await documents(t);
  t.same(await redoclyFindings(publicDoc), [], 'the public document (/openapi.json)');
  t.same(await redoclyFindings(adminDoc), [], 'the admin document (/admin/openapi.json)');
});

t.test('every operation has an operationId of its own, camelCase, and the published ones do not change', async (t) => {
  const { api, publicDoc, adminDoc } = await documents(t);
  const all = [...operationsOf(publicDoc), ...operationsOf(adminDoc)];
  t.ok(all.length >= 27, `${all.length} operations in the two documents`);
  for (const { method, path, operation } of all) {
    t.match(
      operation.operationId,
      /^[a-z][a-zA-Z0-9]*$/,
      `${method.toUpperCase()} ${path} has a camelCase operationId`,
    );
    t.ok(isRoute(api, method, path), `${method.toUpperCase()} ${path} is a route of the app`);
  }
  const ids = all.map((o) => o.operation.operationId);
  const shared = ids.filter((id, i) => ids.indexOf(id) !== i);
  t.same(shared, [], 'no two operations share an operationId, across both documents');
  t.same(operationIds(publicDoc), PUBLIC_OPERATIONS, 'the public operations and their operationIds');
  t.same(operationIds(adminDoc), ADMIN_OPERATIONS, 'the admin operations and their operationIds');
});

t.test('documents describe themselves: servers, tags, licence, response meanings', async (t) => {
  const { publicDoc, adminDoc } = await documents(t);
  for (const [name, document] of [
    ['public', publicDoc],
    ['admin', adminDoc],
  ] as const) {
    t.same(document.servers, [{ url: BASE_URL, description: 'This service (PUBLIC_BASE_URL)' }], `${name}: servers`);
    t.match(document.info, { version: '1.0.0', license: { identifier: 'LicenseRef-Proprietary' } });
    const declared = new Map((document.tags ?? []).map((tag) => [tag.name, tag.description ?? '']));
    for (const { method, path, operation } of operationsOf(document)) {
      const where = `${name}: ${method.toUpperCase()} ${path}`;
      t.equal(operation.tags?.length, 1, `${where} has one tag`);
      t.ok(declared.get(operation.tags?.[0] ?? '')?.length, `${where}: its tag is declared with a description`);
      t.ok(operation.summary, `${where} has a summary`);
      for (const [status, response] of Object.entries(operation.responses))
        t.not(response.description, 'Default Response', `${where} ${status} says what the answer means`);
      t.ok(
        Object.keys(operation.responses).some((status) => status.startsWith('4')),
        `${where} documents its refusals`,
      );
    }
  }
});

t.test('the admin interface has a document of its own; the public one holds none of it', async (t) => {
  const { api, publicDoc, adminDoc } = await documents(t);
  t.ok(
    Object.keys(publicDoc.paths).every((path) => path.startsWith('/v1/')),
    'the public document holds only /v1 paths',
  );
  t.notMatch(JSON.stringify(publicDoc), /admin/i, 'and says nothing of the admin interface');
  const OPERATOR = '/admin/v1/workspaces';
  t.ok(
    Object.keys(adminDoc.paths).every((path) => path === OPERATOR || path.startsWith(`${OPERATOR}/{workspace}/`)),
    "the admin document holds only /admin/v1 paths: a workspace's, and the operator's one",
  );

  t.same(adminDoc.components?.securitySchemes, {
    adminToken: {
      type: 'http',
      scheme: 'bearer',
      description: "A staff member's personal access token for this workspace, never an API key",
    },
    operatorToken: {
      type: 'http',
      scheme: 'bearer',
      description: "The platform operator's ADMIN_TOKEN: it opens POST /admin/v1/workspaces and nothing else",
    },
  });
  t.same(adminDoc.security, [{ adminToken: [] }], "every admin operation needs a member's access token");
  const operator = adminDoc.paths[OPERATOR]?.post;
  t.same(operator?.security, [{ operatorToken: [] }], "but the operator's, which takes ADMIN_TOKEN");
  t.match(operator?.responses, { 201: {}, 400: {}, 401: {}, 409: {} }, 'with its answers');
  for (const { method, path, operation } of operationsOf(adminDoc)) {
    if (path === OPERATOR) continue;
    t.equal(operation.security, undefined, `${method.toUpperCase()} ${path} keeps the document's security`);
    const header = operation.parameters?.find((p) => p.in === 'header' && p.name.toLowerCase() === 'x-admin-user');
    t.equal(header, undefined, `${method.toUpperCase()} ${path}: the member comes from the token, not a header`);
    t.match(operation.responses, { 401: {}, 403: {}, 404: {} }, 'with the refusals of the admin hook');
  }
  t.match(publicDoc.components?.securitySchemes, { bearer: { type: 'http', scheme: 'bearer' } });

  const adminUi = await api.request('/admin/docs/');
  t.equal(adminUi.status, 200, 'the admin docs page');
  t.match(await adminUi.text(), /<html/i);
  t.same(await (await api.request('/admin/docs/json')).json(), adminDoc, 'renders the admin document');
  t.same(await (await api.request('/docs/json')).json(), publicDoc, 'and /docs the public one');
});

t.test('without ADMIN_TOKEN nothing of the admin interface exists: 404 in the Error shape', async (t) => {
  const api = await startApp(t);
  t.equal(api.services.config.adminToken, undefined);
  for (const [method, path] of [
    ['GET', '/admin/openapi.json'],
    ['GET', '/admin/docs/'],
    ['GET', '/admin/docs/json'],
    ['GET', '/admin/v1/workspaces/any/webhooks'],
    ['POST', '/admin/v1/workspaces/any/leads/0190a5c4-8c1e-7000-8000-000000000001/convert'],
  ] as const) {
    const response = await api.request(path, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-admin-user': 'asha@northstar.example' },
    });
    t.equal(response.status, 404, `${method} ${path}`);
    const body = (await response.json()) as Record<string, unknown>;
    t.match(body, { error: 'not_found', message: String, request_id: /^req_[0-9a-f]{24}$/ });
    t.equal(response.headers.get('request-id'), body.request_id);
  }
  const publicDoc = await servedDocument(api, '/openapi.json');
  t.same(operationIds(publicDoc), PUBLIC_OPERATIONS, 'the public document is the same with the admin interface off');
});

t.test('PUBLIC_BASE_URL: the servers entry, and its default', async (t) => {
  t.equal(loadConfig({}).publicBaseUrl, 'http://127.0.0.1:3000', 'unset: where the service listens');
  t.equal(loadConfig({ HOST: '0.0.0.0', PORT: '8080' }).publicBaseUrl, 'http://localhost:8080', 'a wildcard host');
  t.equal(loadConfig({ HOST: '::', PORT: '8080' }).publicBaseUrl, 'http://localhost:8080');
  t.equal(loadConfig({ HOST: '::1' }).publicBaseUrl, 'http://[::1]:3000', 'an IPv6 address in brackets');
  t.equal(loadConfig({ PUBLIC_BASE_URL: 'https://api.crm.test/' }).publicBaseUrl, 'https://api.crm.test');
  t.equal(loadConfig({ PUBLIC_BASE_URL: 'https://api.crm.test:443/crm//' }).publicBaseUrl, 'https://api.crm.test/crm');
  for (const wrong of [
    'api.crm.test',
    '/v1',
    'ftp://api.crm.test',
    'https://user:password@api.crm.test',
    'https://api.crm.test/?x=1',
    'https://api.crm.test/#top',
  ]) {
    t.throws(() => loadConfig({ PUBLIC_BASE_URL: wrong }), /PUBLIC_BASE_URL must be/, `refused: ${wrong}`);
    try {
      loadConfig({ PUBLIC_BASE_URL: wrong });
    } catch (error) {
      t.notMatch((error as Error).message, wrong, 'the refusal does not repeat the value');
    }
  }

  await checkProperty(
    t,
    'any http(s) base URL: operation paths joined to it stay under its origin and path',
    fc.property(fc.webUrl(), (url) => {
      const base = loadConfig({ PUBLIC_BASE_URL: url }).publicBaseUrl;
      const given = new URL(url);
      const joined = new URL(`${base}/v1/leads`);
      return (
        !base.endsWith('/') &&
        joined.origin === given.origin &&
        joined.pathname === `${given.pathname.replace(/\/+$/, '')}/v1/leads`
      );
    }),
    300,
  );
  await checkProperty(
    t,
    'a base URL with a query or a fragment is refused',
    fc.property(
      fc.webUrl({ withQueryParameters: true, withFragments: true }).filter((url) => {
        const parsed = new URL(url);
        return parsed.search !== '' || parsed.hash !== '';
      }),
      (url) => {
        try {
          loadConfig({ PUBLIC_BASE_URL: url });
          return false;
        } catch (error) {
          return /PUBLIC_BASE_URL must be/.test((error as Error).message);
        }
      },
    ),
    300,
  );
});

t.test(
  "the public document documents every webhook kind: its body the kind's envelope, its data a component",
  async (t) => {
    const { publicDoc } = await documents(t);
    const doc = publicDoc as unknown as {
      components: { schemas: Record<string, { properties?: Record<string, unknown>; anyOf?: unknown[] }> };
      webhooks: Record<string, { post: { requestBody: { content: Record<string, { schema: unknown }> } } }>;
    };
    // The kinds sent to webhooks are EVENT_KINDS (held equal to the events that carry a payload at compile time,
    // src/events/domain-events.ts): each has its entry, and nothing else does.
    t.same(Object.keys(doc.webhooks).sort(), [...EVENT_KINDS].sort(), 'one webhooks entry per kind, no other');
    for (const kind of EVENT_KINDS) {
      const envelope = envelopeComponent(kind);
      t.same(
        doc.webhooks[kind]?.post.requestBody.content['application/json']?.schema,
        { $ref: `#/components/schemas/${envelope}` },
        `${kind}: the body is ${envelope}`,
      );
      t.match(
        doc.components.schemas[envelope]?.properties,
        { event: { enum: [kind] }, data: { $ref: `#/components/schemas/${EVENT_DATA[kind].component}` } },
        `${envelope}: event is ${kind}, data a ${EVENT_DATA[kind].component}`,
      );
      t.ok(
        doc.components.schemas[EVENT_DATA[kind].component]?.properties?.id,
        `${EVENT_DATA[kind].component} has an id`,
      );
    }
    t.same(
      doc.components.schemas.WebhookEvent?.anyOf,
      EVENT_KINDS.map((kind) => ({ $ref: `#/components/schemas/${envelopeComponent(kind)}` })),
      'WebhookEvent is one of the envelopes, told apart by `event`',
    );
  },
);

t.test(
  'the Events API answers WebhookEvent, typed by kind, and other operations name the shared components',
  async (t) => {
    const { publicDoc } = await documents(t);
    const schemaOf = (path: string) =>
      (
        publicDoc.paths[path]?.get?.responses['200'] as unknown as {
          content: Record<string, { schema: { properties?: Record<string, unknown> } & Record<string, unknown> }>;
        }
      ).content['application/json']!.schema;
    t.same(schemaOf('/v1/events').properties?.data, {
      type: 'array',
      items: { $ref: '#/components/schemas/WebhookEvent' },
      description: 'each event exactly as its deliveries carry it',
    });
    t.same(schemaOf('/v1/events/{id}'), { $ref: '#/components/schemas/WebhookEvent' });
    t.same(schemaOf('/v1/leads/{id}'), { $ref: '#/components/schemas/Lead' }, 'the Lead is the one component');
  },
);
