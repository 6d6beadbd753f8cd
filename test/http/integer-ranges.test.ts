import t from 'tap';
import { seedWorkspace, startApp } from '../support/app.js';
import { operationsOf, servedDocument, type OpenApiDocument } from '../support/openapi.js';
import {
  bodyIntegers,
  concretePath,
  credentialOf,
  setAt,
  type DocumentedOperation,
} from '../support/openapi-requests.js';
import type { JsonSchema } from '../support/schema-arbitrary.js';

const ADMIN_TOKEN = 'admin-token-for-integer-ranges-0123456789';

/**
 * Every integer a request can carry, in both documents (query, path, header and JSON body), has a range its schema
 * states; a value past either end, or one no 64-bit column holds, is a 400 `validation_failed` naming the field, never
 * a 500 from the database (`sequence_gte=99999999999999999999` was one).
 */
t.test('every integer parameter of both documents has a range, and a value past it is a 400 naming it', async (t) => {
  const api = await startApp(t, { config: { adminToken: ADMIN_TOKEN } });
  const ws = await seedWorkspace(api);
  const documents = [
    await servedDocument(api, '/openapi.json'),
    await servedDocument(api, '/admin/openapi.json'),
  ] as OpenApiDocument[];
  const send = async (op: DocumentedOperation, path: string, headers: Record<string, string>, body?: unknown) => {
    const response = await fetch(api.baseUrl + path, {
      method: op.method.toUpperCase(),
      headers: {
        ...credentialOf(op, ws, ADMIN_TOKEN),
        ...headers,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return { status: response.status, body: (await response.json().catch(() => ({}))) as Record<string, unknown> };
  };
  const expectRefused = (answer: { status: number; body: Record<string, unknown> }, field: string, what: string) => {
    t.equal(answer.status, 400, `${what}: 400 (${JSON.stringify(answer.body).slice(0, 200)})`);
    t.equal(answer.body.error, 'validation_failed', `${what}: validation_failed`);
    t.ok((answer.body.fields as Record<string, string> | undefined)?.[field], `${what}: names ${field}`);
  };
  let parameters = 0;
  let properties = 0;
  for (const document of documents)
    for (const op of operationsOf(document) as DocumentedOperation[]) {
      const name = `${op.method.toUpperCase()} ${op.path}`;
      for (const parameter of op.operation.parameters ?? []) {
        const schema = (parameter.schema ?? {}) as JsonSchema;
        if (![schema.type].flat().includes('integer')) continue;
        parameters += 1;
        t.type(schema.maximum, 'number', `${name} ${parameter.name}: a maximum`);
        t.type(schema.minimum, 'number', `${name} ${parameter.name}: a minimum`);
        const outside = [Number(schema.maximum) + 1, Number(schema.minimum) - 1, '99999999999999999999'];
        for (const value of outside) {
          const what = `${name} ${parameter.in} ${parameter.name}=${value}`;
          if (parameter.in === 'query') {
            const path = `${concretePath(op.path, ws)}?${parameter.name}=${value}`;
            expectRefused(await send(op, path, {}), parameter.name, what);
          } else if (parameter.in === 'header') {
            expectRefused(
              await send(op, concretePath(op.path, ws), { [parameter.name]: String(value) }),
              parameter.name,
              what,
            );
          } else {
            // A path segment that is no well-formed value names nothing: 404, as for a malformed id.
            const path = concretePath(op.path, ws, { [parameter.name]: String(value) });
            t.equal((await send(op, path, {})).status, 404, what);
          }
        }
      }
      const json = op.operation.requestBody?.content['application/json']?.schema;
      for (const [type, content] of Object.entries(op.operation.requestBody?.content ?? {}))
        if (type !== 'application/json')
          t.same(bodyIntegers(content.schema), [], `${name}: its ${type} body has no integer`);
      if (!json) continue;
      for (const integer of bodyIntegers(json)) {
        properties += 1;
        const field = integer.at.join('.');
        t.type(integer.schema.maximum, 'number', `${name} body ${field}: a maximum`);
        t.type(integer.schema.minimum, 'number', `${name} body ${field}: a minimum`);
        for (const value of [Number(integer.schema.maximum) + 1, Number(integer.schema.minimum) - 1, 1e20]) {
          const body = setAt({}, integer.at, value);
          expectRefused(await send(op, concretePath(op.path, ws), {}, body), field, `${name} body ${field}=${value}`);
        }
      }
    }
  t.ok(parameters >= 6, `${parameters} integer parameters sent past their ranges`);
  t.ok(properties >= 5, `${properties} integer body properties sent past their ranges`);
});
