import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import t from 'tap';
import { SCOPES } from '../../src/shared/enums.js';
import { seedWorkspace, startApp, type SeededWorkspace, type TestApp } from '../support/app.js';
import { operationsOf, servedDocument, type OpenApiDocument } from '../support/openapi.js';
import { concretePath, credentialOf, type DocumentedOperation } from '../support/openapi-requests.js';
import { checkProperty } from '../support/properties.js';
import { invalidValue, validValue, type JsonSchema } from '../support/schema-arbitrary.js';

/**
 * Requests generated from each OpenAPI document (the public one and the admin one): for a random operation, path,
 * query and body values drawn from its schemas, valid or, one in four, refused by them. Every answer must be a status
 * the operation declares, with a body its schema for that status accepts, and none a 5xx. A path with a method no
 * operation has must answer 405 with `Allow` naming the documented ones. The documents and the service cannot drift
 * apart unnoticed (test/http/openapi-prism.test.ts checks fixed cases through Prism).
 */

const ADMIN_TOKEN = 'admin-token-for-openapi-property-0123456789';
const RUNS = 150;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

interface Generated {
  op: DocumentedOperation;
  ids: Record<string, string>;
  query: [string, unknown][];
  body: unknown;
  bodyType: 'json' | 'multipart' | 'none';
}

const text = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));
const validOrNot = (schema: JsonSchema) =>
  fc.oneof({ weight: 3, arbitrary: validValue(schema) }, { weight: 1, arbitrary: invalidValue(schema) });

/** A body from its schema: valid, or valid but for one property given a value its schema refuses. */
function bodyOf(schema: JsonSchema): fc.Arbitrary<unknown> {
  const properties = Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>);
  if (properties.length === 0) return validValue(schema);
  return fc.oneof(
    { weight: 3, arbitrary: validValue(schema) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(validValue(schema), fc.constantFrom(...properties))
        .chain(([body, [name, property]]) =>
          invalidValue(property).map((bad) => ({ ...(body as object), [name]: bad })),
        ),
    },
  );
}

function requestOf(op: DocumentedOperation, knownIds: string[]): fc.Arbitrary<Generated> {
  const pathNames = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!).filter((n) => n !== 'workspace');
  const ids = fc.record(
    Object.fromEntries(
      pathNames.map((name) => [
        name,
        name === 'module'
          ? fc.constantFrom('sop', 'not-a-module')
          : fc.oneof(fc.constantFrom(...knownIds), fc.uuid(), fc.constant('not-an-id')),
      ]),
    ),
  ) as fc.Arbitrary<Record<string, string>>;
  const queryParameters = (op.operation.parameters ?? []).filter((p) => p.in === 'query' && p.name !== 'key');
  const query = fc
    .tuple(...queryParameters.map((p) => fc.option(validOrNot((p.schema ?? {}) as JsonSchema), { nil: undefined })))
    .map((values) =>
      values.flatMap((value, i): [string, unknown][] =>
        value === undefined ? [] : [[queryParameters[i]!.name, value]],
      ),
    );
  const content = op.operation.requestBody?.content ?? {};
  const json = content['application/json']?.schema;
  const multipart = content['multipart/form-data']?.schema;
  const body: fc.Arbitrary<[unknown, Generated['bodyType']]> = json
    ? bodyOf(json).map((b) => [b, 'json'])
    : multipart
      ? bodyOf(multipart).map((b) => [b, 'multipart'])
      : fc.constant([undefined, 'none']);
  return fc.tuple(ids, query, body).map(([i, q, [b, bodyType]]) => ({ op, ids: i, query: q, body: b, bodyType }));
}

async function send(api: TestApp, ws: SeededWorkspace, request: Generated): Promise<Response> {
  const { op } = request;
  const search = new URLSearchParams(request.query.map(([name, value]): [string, string] => [name, text(value)]));
  if (op.path === '/v1/widget/config') search.set('key', ws.publicLive);
  const path = `${concretePath(op.path, ws, request.ids)}${search.size > 0 ? `?${search}` : ''}`;
  const headers: Record<string, string> = credentialOf(op, ws, ADMIN_TOKEN);
  let body: string | FormData | undefined;
  if (request.bodyType === 'json') {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(request.body);
  } else if (request.bodyType === 'multipart') {
    const form = new FormData();
    for (const [name, value] of Object.entries((request.body ?? {}) as Record<string, unknown>))
      if (name !== 'file') form.set(name, text(value));
    form.set('file', new Blob(['%PDF-1.4\n%%EOF\n'], { type: 'application/pdf' }), 'generated.pdf');
    body = form;
  }
  return fetch(api.baseUrl + path, { method: op.method.toUpperCase(), headers, body });
}

/** The validator of an operation's answer for a status, compiled from the document (its components resolve). */
function answerValidators(document: OpenApiDocument, id: string) {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats.default(ajv);
  ajv.addFormat('binary', true);
  ajv.addSchema(document as object, id);
  const pointer = (...tokens: string[]) => tokens.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
  return (op: DocumentedOperation, status: string) => {
    const response = (op.operation.responses as Record<string, { content?: Record<string, unknown> }>)[status];
    if (!response?.content?.['application/json']) return undefined;
    return ajv.getSchema(
      `${id}#/${pointer('paths', op.path, op.method, 'responses', status, 'content', 'application/json', 'schema')}`,
    );
  };
}

async function checkAnswer(request: Generated, response: Response, validatorOf: ReturnType<typeof answerValidators>) {
  const { op } = request;
  const what = `${op.method.toUpperCase()} ${op.path} ${JSON.stringify({ ...request, op: undefined }).slice(0, 400)}`;
  const status = String(response.status);
  const raw = await response.text();
  if (response.status >= 500) throw new Error(`${what}: ${status} ${raw.slice(0, 300)}`);
  if (!(status in op.operation.responses)) throw new Error(`${what}: ${status} is not declared (${raw.slice(0, 300)})`);
  const validate = validatorOf(op, status);
  if (!validate || !(response.headers.get('content-type') ?? '').startsWith('application/json')) return;
  const body = raw === '' ? null : (JSON.parse(raw) as unknown);
  if (!validate(body))
    throw new Error(
      `${what}: the ${status} answer breaks its schema: ${JSON.stringify(validate.errors).slice(0, 500)}`,
    );
}

/** A method the document has no operation for at a path: 405 in the Error shape, `Allow` naming every documented one. */
async function checkOtherMethod(api: TestApp, ws: SeededWorkspace, document: OpenApiDocument, path: string) {
  const documented = Object.keys(document.paths[path]!).filter((m) => METHODS.includes(m));
  const other = METHODS.find((m) => !documented.includes(m));
  if (!other) return;
  const response = await fetch(api.baseUrl + concretePath(path, ws), { method: other.toUpperCase() });
  const body = (await response.json()) as Record<string, unknown>;
  if (response.status !== 405 || body.error !== 'method_not_allowed' || typeof body.request_id !== 'string')
    throw new Error(`${other.toUpperCase()} ${path}: ${response.status} ${JSON.stringify(body)}`);
  const allow = (response.headers.get('allow') ?? '').split(', ');
  for (const method of documented)
    if (!allow.includes(method.toUpperCase())) throw new Error(`${other} ${path}: Allow ${allow} lacks ${method}`);
}

t.test('requests generated from both documents get answers the documents declare, never a 5xx', async (t) => {
  const api = await startApp(t, { config: { adminToken: ADMIN_TOKEN } });
  // The buckets are raised so that the run reaches the operations, not the rate limit (429 would be declared too).
  const bucket = { capacity: 100_000, refill_per_second: 10_000 };
  const ws = await seedWorkspace(api, {
    limits: { rate: { key: bucket, widget: bucket, scopes: Object.fromEntries(SCOPES.map((s) => [s, bucket])) } },
  });
  const lead = await api.request('/v1/leads', {
    method: 'POST',
    key: ws.live,
    json: { full_name: 'Generated Case', email: 'generated@example.org', consent: true },
  });
  const leadId = ((await lead.json()) as { id: string }).id;
  const documents: [string, OpenApiDocument][] = [
    ['public', await servedDocument(api, '/openapi.json')],
    ['admin', await servedDocument(api, '/admin/openapi.json')],
  ];
  for (const [name, document] of documents) {
    const validatorOf = answerValidators(document, name);
    const operations = operationsOf(document) as DocumentedOperation[];
    const statuses = new Map<string, number>();
    await checkProperty(
      t,
      `${name} document`,
      fc.asyncProperty(
        fc.constantFrom(...operations).chain((op) => requestOf(op, [leadId])),
        async (request) => {
          const response = await send(api, ws, request);
          const key = `${request.op.method.toUpperCase()} ${request.op.path} ${response.status}`;
          statuses.set(key, (statuses.get(key) ?? 0) + 1);
          await checkAnswer(request, response, validatorOf);
        },
      ),
      RUNS,
    );
    t.comment(`${name}: ${[...statuses].map(([k, n]) => `${k} ×${n}`).join('; ')}`);
    for (const path of Object.keys(document.paths)) await checkOtherMethod(api, ws, document, path);
    t.pass(`${name}: every documented path answers another method with 405 and Allow`);
  }
});
