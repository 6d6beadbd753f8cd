import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { ADMIN_TOKEN, appFixture, type AppFixture } from '../applications/support.js';
import { OPERATIONS, PERMISSIONS } from '../../src/identity/permissions.js';
import { MemoryRateLimitStore } from '../../src/ratelimit/memory-store.js';
import { seedWorkspace } from '../support/app.js';
import { operationsOf, servedDocument } from '../support/openapi.js';
import { checkProperty } from '../support/properties.js';

const ERROR_KEYS = ['error', 'fields', 'message', 'request_id', 'required', 'retry_after', 'scope'];

/** Status and body of an answer, with the Error shape checked for every refusal. */
async function answer(t: Test, response: Response): Promise<{ status: number; body: Record<string, unknown> }> {
  const body = (await response.json()) as Record<string, unknown>;
  if (response.status >= 400) {
    t.match(body, { error: /^[a-z_]+$/, message: String, request_id: /^req_[0-9a-f]{24}$/ }, 'the Error shape');
    t.ok(
      Object.keys(body).every((key) => ERROR_KEYS.includes(key)),
      'nothing beyond the Error fields',
    );
    t.equal(response.headers.get('request-id'), body.request_id, 'Request-Id is the body request_id');
  }
  return { status: response.status, body };
}

/**
 * Every staff operation of the admin document as a request on the fixture's workspace (ids that name nothing): all
 * but the platform operator's createWorkspace, which takes ADMIN_TOKEN (test/http/operator-tokens.test.ts).
 */
async function adminOperations(f: AppFixture) {
  const document = await servedDocument(f.app, '/admin/openapi.json');
  const staffOperations = operationsOf(document).filter(({ operation }) => operation.operationId !== 'createWorkspace');
  return staffOperations.map(({ method, path, operation }) => ({
    operationId: operation.operationId,
    method: method.toUpperCase(),
    name: `${method.toUpperCase()} ${path}`,
    path: (workspace: string) =>
      path
        .replace('{workspace}', workspace)
        .replace(/\{(id|leadId|deliveryId)\}/g, () => randomUUID())
        .replace('{module}', 'sop'),
  }));
}

t.test('one hook authenticates every admin operation before its path, query and body are read', async (t) => {
  const f = await appFixture(t);
  const staffHeaders = { authorization: `Bearer ${f.ws.staffToken}` };
  const formerToken = await f.ws.tokenFor('former@northstar.example');
  const operations = await adminOperations(f);
  // The admin operations are the permission table's (the admin hook refuses any other): the document lists each.
  t.same(
    operations.map((o) => o.operationId).sort(),
    OPERATIONS.flatMap((operation) => PERMISSIONS[operation].admin).sort(),
    'every admin operation of the permission table, and no other, is in the admin document',
  );
  // Wrong tokens count toward the address's failed authentications: on a clock that does not move, exactly
  // AUTH_FAILURE_BURST of them answer 401, later ones 429, all before anything else of the request is read.
  const frozen = Date.now();
  f.app.services.rateLimits = new MemoryRateLimitStore(() => frozen);
  const { capacity } = f.app.services.config.authFailureLimit;
  let wrongTokens = 0;
  // A body no operation accepts and a query no operation knows: each would be a 400 if it were read first.
  const junk = { unknown_property: true };
  for (const operation of operations) {
    const url = `${operation.path(f.ws.workspace.slug)}?sandbox=maybe&other=1`;
    const send = (headers: Record<string, string>) =>
      f.app.request(url, {
        method: operation.method,
        headers,
        ...(operation.method === 'GET' ? {} : { json: junk }),
      });

    const anonymous = await answer(t, await send({}));
    t.match(anonymous, { status: 401, body: { error: 'invalid_admin_token' } }, `${operation.name}: no token`);
    const wrongToken = (n: number) =>
      n <= capacity
        ? { status: 401, body: { error: 'invalid_admin_token' } }
        : { status: 429, body: { error: 'rate_limited', scope: 'failed_authentication' } };
    const apiKey = await answer(t, await send({ authorization: `Bearer ${f.ws.live}` }));
    t.match(apiKey, wrongToken(++wrongTokens), `${operation.name}: an API key`);
    const operator = await answer(t, await send({ authorization: `Bearer ${ADMIN_TOKEN}` }));
    t.match(operator, wrongToken(++wrongTokens), `${operation.name}: ADMIN_TOKEN`);
    const unknownWorkspace = await answer(
      t,
      await f.app.request(`${operation.path('no-such-workspace')}`, {
        method: operation.method,
        headers: staffHeaders,
      }),
    );
    t.match(unknownWorkspace, { status: 404, body: { error: 'not_found', message: 'No such workspace' } });
    const former = await answer(t, await send({ authorization: `Bearer ${formerToken}` }));
    t.match(former, { status: 403, body: { error: 'forbidden' } }, `${operation.name}: an inactive member's token`);
  }
});

t.test('the token and its member, check by check', async (t) => {
  const f = await appFixture(t);
  const token = f.ws.staffToken;
  const list = (headers: Record<string, string>, workspace = f.ws.workspace.slug) =>
    f.app.request(`/admin/v1/workspaces/${workspace}/webhooks`, { headers });
  const staffHeaders = { authorization: `Bearer ${token}` };

  t.equal((await list(staffHeaders)).status, 200, "an active member's token");
  t.equal((await list({ authorization: `bearer ${token}` })).status, 200, 'any case of Bearer');
  t.equal(
    (await list({ ...staffHeaders, 'x-admin-user': 'vikram@northstar.example' })).status,
    200,
    'X-Admin-User is not read',
  );
  t.equal((await list(staffHeaders, f.ws.workspace.id)).status, 200, 'the workspace by id');
  t.equal((await list(staffHeaders, f.ws.workspace.id.toUpperCase())).status, 200, 'by id in upper case');
  for (const authorization of [
    token,
    `Basic ${token}`,
    `Bearer ${token} extra`,
    `Bearer ${token.slice(0, -1)}`,
    `Bearer ${token}x`,
    `Bearer ${ADMIN_TOKEN}`,
    'Bearer ',
  ]) {
    const refused = await answer(t, await list({ authorization }));
    t.match(
      refused,
      { status: 401, body: { error: 'invalid_admin_token' } },
      `refused: ${authorization.slice(0, 12)}…`,
    );
  }

  const other = await seedWorkspace(f.app, {
    users: [{ name: 'Other Owner', email: 'other@else.example', role: 'owner', branch: 'DEL' }],
  });
  const ofOther = await answer(t, await list({ authorization: `Bearer ${other.staffToken}` }));
  t.match(ofOther, { status: 403, body: { error: 'forbidden' } }, "another workspace's token");
  const inOwn = await list({ authorization: `Bearer ${other.staffToken}` }, other.workspace.slug);
  t.equal(inOwn.status, 200, 'which acts in its own');
  const staffElsewhere = await answer(t, await list(staffHeaders, other.workspace.slug));
  t.match(staffElsewhere, { status: 403 }, 'and the first workspace token cannot act there');
  const noRoute = await answer(t, await f.app.request('/admin/v1/tasks'));
  t.match(noRoute, { status: 404, body: { error: 'not_found' } }, 'a path of no admin operation: 404, token or not');
  const operatorsPath = await f.app.request('/admin/v1/workspaces');
  t.match(
    await answer(t, operatorsPath),
    { status: 405, body: { error: 'method_not_allowed' } },
    "a GET of the operator's path: 405",
  );
  t.equal(operatorsPath.headers.get('allow'), 'POST', 'which says the method it takes');
  for (const workspace of ['-'.repeat(36), 'A'.repeat(40), '%E2%80%AE', 'a', '0'.repeat(36)]) {
    const refused = await answer(t, await list(staffHeaders, workspace));
    t.match(refused, { status: 404, body: { error: 'not_found' } }, `no workspace is named ${workspace}`);
  }
});

t.test('the member of the access token is the actor of what the operation changes', async (t) => {
  const f = await appFixture(t);
  const leadId = await f.lead();
  const converted = await f.admin(`/leads/${leadId}/convert`, {
    method: 'POST',
    user: 'VIKRAM@northstar.example',
  });
  t.equal(converted.status, 201);
  const { id } = (await converted.json()) as { id: string };
  const [opened] = await f.stream(id);
  t.match(opened?.metadata.actor, { type: 'user', email: 'vikram@northstar.example', name: 'Vikram Singh' });
});

t.test('any token: refused in the Error shape, never let through by mistake', async (t) => {
  const f = await appFixture(t);
  const url = `/admin/v1/workspaces/${f.ws.workspace.slug}/webhooks`;
  const text = fc.string({ unit: 'grapheme-ascii', maxLength: 80 }).map((s) => s.trim());
  await checkProperty(
    t,
    "a token other than a member's access token is 401 invalid_admin_token (or 429 past the failure limit)",
    fc.asyncProperty(
      fc
        .oneof(
          text,
          text.map((s) => `Bearer ${s}`),
          text.map((s) => `Bearer vcrm_pat_${s}`),
        )
        .filter((s) => s !== `Bearer ${f.ws.staffToken}`),
      async (authorization) => {
        const response = await f.app.request(url, { headers: { authorization } });
        const body = (await response.json()) as { error: string; request_id: string; scope?: string };
        // Wrong tokens count as failed authentications: past the limit, 429 for this address.
        const refused =
          (response.status === 401 && body.error === 'invalid_admin_token') ||
          (response.status === 429 && body.error === 'rate_limited' && body.scope === 'failed_authentication');
        return refused && response.headers.get('request-id') === body.request_id;
      },
    ),
    100,
  );
});
