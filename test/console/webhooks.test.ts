import t, { type Test } from 'tap';
import { ensureAccount, setPassword } from '../../src/identity/accounts.js';
import { ROLES, type Role } from '../../src/identity/permissions.js';
import { PAUSE_THRESHOLD } from '../../src/domain/webhooks/endpoint.js';
import { everyRole, memberOf } from '../identity/support.js';
import { resourcePayload, webhookHarness, type Harness } from '../webhooks/support/harness.js';
import { waitFor } from '../webhooks/support/receiver.js';
import { ConsoleClient, PASSWORD } from './support.js';

/** A harness whose workspace has a member of every role, each able to sign in to the console. */
async function consoleHarness(
  t: Test,
  limits?: { webhook_endpoints: number },
): Promise<Harness & { as(role: Role): Promise<ConsoleClient> }> {
  const h = await webhookHarness(t, { definition: { ...everyRole(), ...(limits ? { limits } : {}) } });
  for (const user of h.ws.workspace.settings.users) {
    const account = await ensureAccount(h.pool, user, h.services.now());
    await setPassword(h.pool, account.id, PASSWORD, h.services.now());
  }
  return Object.assign(h, {
    async as(role: Role) {
      const client = new ConsoleClient(h);
      await client.signIn(memberOf(role));
      return client;
    },
  });
}

const text = (page: string) =>
  page
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;|&rsquo;|’/g, "'")
    .replace(/\s+/g, ' ');

t.test('a receiver whose certificate names another host: failures shown as failures, not as waiting', async (t) => {
  const h = await consoleHarness(t);
  // wrong.test resolves to the loopback receiver, whose certificate (from the test CA) names other hosts only.
  h.resolver.table.set('wrong.test', ['127.0.0.1']);
  const endpoint = await h.createEndpoint({ url: h.receiver.url('wrong.test'), events: ['document.uploaded'] });
  await h.startWorkers();
  for (let i = 0; i < PAUSE_THRESHOLD; i++) await h.appendEvent('document.uploaded', resourcePayload());
  await waitFor(
    async () => {
      const r = await h.pool.query("SELECT 1 FROM webhook_endpoints WHERE id = $1 AND status = 'paused'", [
        endpoint.id,
      ]);
      return r.rows.length === 1;
    },
    'the endpoint paused after its run of failures',
    60_000,
  );
  t.equal(h.receiver.requests.length, 0, 'no request reached the receiver: TLS refused every connection');

  const owner = await h.as('owner');
  const w = `/console/w/${h.ws.workspace.slug}/webhooks`;
  const list = text((await owner.get(w)).text);
  t.match(list, new RegExp(`0% of ${PAUSE_THRESHOLD} attempts`), 'the success rate counts the failed attempts');
  t.notMatch(list, /no deliveries|no attempts/);
  t.match(list, `Paused since`, 'the list says it is paused');

  const page = await owner.get(`${w}/${endpoint.id}`);
  const words = text(page.text);
  t.equal(words.split(`${PAUSE_THRESHOLD} deliveries failed in a row`).length - 1, 1, 'the reason is said once');
  t.match(words, /5 × ERR_TLS_CERT_ALTNAME_INVALID/, 'the last failures grouped by what they answered');
  t.notMatch(words, /failed in a row[^.]*after \d+ failures in a row/, 'the pause reason does not repeat itself');
  t.notMatch(words, / pending /, 'no delivery reads "pending"');
  t.match(
    words,
    /Waiting for the paused endpoint, after 1 attempt that failed/,
    'each delivery: held by the pause, after its failed attempt',
  );
  t.match(words, /altnames|certificate|Hostname/i, 'the last error is in the row');

  const failing = text((await owner.get(`${w}/${endpoint.id}?state=failing`)).text);
  t.notMatch(failing, /No delivery matches/, 'the failing filter finds them');
  t.equal(failing.match(/Waiting for the paused endpoint, after 1 attempt/g)?.length, PAUSE_THRESHOLD);

  const since = new Date(Date.now() - 3600_000).toISOString().slice(0, 16);
  const preview = text((await owner.get(`${w}/${endpoint.id}/retry-failed?since=${since}`)).text);
  t.match(preview, `${PAUSE_THRESHOLD} failing deliveries since`, '"retry failed" counts the same deliveries');
  const retried = await owner.post(`${w}/${endpoint.id}/retry-failed`, { since });
  t.equal(retried.status, 303, 'the retry answers with a redirect');
  t.match(text((await owner.get(retried.headers.get('location')!)).text), `${PAUSE_THRESHOLD} failing deliveries`);
  const again = text((await owner.get(`${w}/${endpoint.id}/retry-failed?since=${since}`)).text);
  t.match(again, '0 failing deliveries since', 'each is retried once: a second preview counts none');

  const payload = (await owner.get(`${w}/${endpoint.id}`)).text;
  t.match(payload, /<pre>\{\n {2}&quot;id&quot;: /, 'the payload is indented');
  t.match(payload, /<h3>Payload<\/h3>/);
});

t.test('the delivery log: states, event prefix and list filters, the receiver answer labelled', async (t) => {
  const h = await consoleHarness(t);
  h.receiver.reply = (r) =>
    r.body.includes('"document.rejected"') ? { status: 503, body: 'try later' } : { status: 200 };
  const endpoint = await h.createEndpoint({
    url: h.receiver.url(),
    events: ['document.uploaded', 'document.rejected', 'task.overdue'],
  });
  await h.startWorkers();
  const ok = await h.appendEvent('document.uploaded', resourcePayload());
  const lost = await h.appendEvent('document.rejected', resourcePayload());
  const owner = await h.as('owner');
  const base = `/console/w/${h.ws.workspace.slug}/webhooks/${endpoint.id}`;
  t.equal((await owner.post(`${base}/test`, {})).status, 303, 'a test event, sent from the console');
  await waitFor(
    () =>
      [ok, lost].every((e) => h.receiver.forEvent(e.id).length === 1) &&
      h.receiver.requests.some((r) => r.body.includes('"webhook.test"')),
    'each event arrived once',
    30_000,
  );
  await waitFor(async () => {
    const r = await h.pool.query('SELECT count(*)::int AS n FROM webhook_delivery_attempts');
    return r.rows[0].n === 3;
  }, 'the three attempts are recorded');
  const all = text((await owner.get(base)).text);
  t.match(all, /Failing: 1 attempt so far, next retry \d{4}-\d\d-\d\d \d\d:\d\d UTC/, 'retrying, with its next time');
  t.match(all, /HTTP 503/, 'the last answer in the row');
  t.match(all, /Succeeded after 1 attempt/);
  t.match(all, /The receiver's answer try later/, 'the receiver’s answer is labelled');

  // Each row names its event and shows the kind the filter takes.
  const rows = (page: string) =>
    [...page.matchAll(/<tr>\s*<td>[^<]+<code>([a-z._]+)<\/code><\/td>/g)].map((m) => m[1]).sort();
  const documents = rows((await owner.get(`${base}?event=${encodeURIComponent('document.*')}`)).text);
  t.same(documents, ['document.rejected', 'document.uploaded'], 'a prefix matches its kinds only');
  const listed = rows((await owner.get(`${base}?event=${encodeURIComponent('webhook.test, document.rejected')}`)).text);
  t.same(listed, ['document.rejected', 'webhook.test'], 'a list matches its kinds only');
  t.same(
    rows((await owner.get(`${base}?event=document._ploaded`)).text),
    [],
    'LIKE wildcards typed match only themselves',
  );
  const retrying = text((await owner.get(`${base}?state=retrying`)).text);
  t.match(retrying, 'document.rejected');
  t.notMatch(retrying, /Succeeded after/);
  const succeeded = text((await owner.get(`${base}?state=succeeded`)).text);
  t.notMatch(succeeded, /Failing:/);
  t.match(succeeded, /Succeeded after 1 attempt/);
});

/** An endpoint on the loopback receiver with one delivery, received and recorded as succeeded. */
async function endpointWithOneDelivery(h: Awaited<ReturnType<typeof consoleHarness>>) {
  const endpoint = await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] });
  await h.startWorkers();
  const event = await h.appendEvent('document.uploaded', resourcePayload());
  await waitFor(() => h.receiver.forEvent(event.id).length === 1, 'delivered');
  await waitFor(async () => {
    const r = await h.pool.query("SELECT 1 FROM webhook_deliveries WHERE status = 'succeeded'");
    return r.rows.length === 1;
  }, 'recorded');
  return endpoint;
}

t.test('what each role sees on an endpoint and on the keys page: only what it may do', async (t) => {
  const h = await consoleHarness(t);
  const endpoint = await endpointWithOneDelivery(h);
  const slug = h.ws.workspace.slug;
  const expected: Record<Role, boolean> = {
    owner: true,
    admin: true,
    manager: false,
    counsellor: false,
    viewer: false,
  };
  for (const role of ROLES) {
    const c = await h.as(role);
    const page = await c.get(`/console/w/${slug}/webhooks/${endpoint.id}`);
    if (role === 'counsellor') {
      t.equal(page.status, 403, 'a counsellor does not see webhooks at all');
      continue;
    }
    for (const control of ['Send a test event', 'Rotate the secret', 'Resend this delivery', 'Change the endpoint'])
      t.equal(
        page.text.includes(control),
        expected[role],
        `${role}: ${control} ${expected[role] ? 'shown' : 'hidden'}`,
      );
    const keys = await c.get(`/console/w/${slug}/keys`);
    if (role === 'viewer') continue;
    t.equal(
      keys.text.includes('Create key'),
      expected[role],
      `${role}: Create key ${expected[role] ? 'shown' : 'hidden'}`,
    );
  }
});

t.test('endpoints made, changed, disabled and deleted in the console, under the API rules', async (t) => {
  const h = await consoleHarness(t);
  const admin = await h.as('admin');
  const w = `/console/w/${h.ws.workspace.slug}/webhooks`;
  t.equal((await admin.get(`${w}/new`)).status, 200);
  const internal = await admin.post(w, { url: 'https://10.0.0.7/hooks', events: 'lead.created', mode: 'live' });
  t.equal(internal.status, 400, 'the address guard refuses an internal address');
  t.match(internal.text, /id="f-url-error"/);
  const plain = await admin.post(w, { url: 'http://hooks.test/x', events: 'lead.created' });
  t.equal(plain.status, 400, 'and plain HTTP');
  const noKinds = await admin.post(w, { url: h.receiver.url('hooks.test') });
  t.equal(noKinds.status, 400);
  t.match(noKinds.text, /id="events-error">Choose at least one kind of event/);
  const unknownKind = await admin.post(w, { url: h.receiver.url('hooks.test'), events: 'lead.vanished' });
  t.equal(unknownKind.status, 400, 'a kind the spec does not name is refused');

  const created = await admin.post(w, {
    url: h.receiver.url('hooks.test'),
    description: 'CRM sync',
    events: ['lead.created', 'lead.lost'],
    mode: 'live',
  });
  t.equal(created.status, 303, 'created, then redirected');
  const secretPage = await admin.get(created.headers.get('location')!);
  const secret = /id="one-time-value" tabindex="-1">(whsec_[A-Za-z0-9]+)</.exec(secretPage.text)?.[1];
  t.ok(secret, 'the signing secret shown once at the top');
  t.equal((await admin.get(created.headers.get('location')!)).status, 410, 'and not on a reload');
  const id = /href="\/console\/w\/[^/]+\/webhooks\/([0-9a-f-]{36})"/.exec(secretPage.text)?.[1];
  t.ok(id);
  const api = await h.request('/v1/webhooks', { key: h.ws.live });
  const listed = ((await api.json()) as { data: { id: string; description: string; events: string[] }[] }).data;
  t.same(
    listed.map((e) => [e.id, e.description, e.events]),
    [[id, 'CRM sync', ['lead.created', 'lead.lost']]],
    'the API lists it as made',
  );

  const edit = await admin.get(`${w}/${id}/edit`);
  t.match(edit.text, /value="lead.lost" checked/, 'the change form holds its kinds');
  const refusedEdit = await admin.post(`${w}/${id}/edit`, {
    url: 'https://127.0.0.1.nip.io.invalid/x',
    events: 'lead.created',
  });
  t.equal(refusedEdit.status, 400, 'a change of address goes through the same guard');
  const changed = await admin.post(`${w}/${id}/edit`, {
    url: h.receiver.url('localhost', '/moved'),
    description: '',
    events: 'task.overdue',
  });
  t.equal(changed.status, 303);
  t.match(text((await admin.get(changed.headers.get('location')!)).text), 'The endpoint is changed.');
  const after = ((await (await h.request('/v1/webhooks', { key: h.ws.live })).json()) as { data: unknown[] }).data;
  t.match(after, [{ url: h.receiver.url('localhost', '/moved'), description: null, events: ['task.overdue'] }]);

  t.match(text((await admin.get(`${w}/${id}/disable`)).text), 'Disable the endpoint', 'disabling asks first');
  const disabled = await admin.post(`${w}/${id}/disable`, {});
  t.equal(disabled.status, 303);
  const disabledPage = text((await admin.get(`${w}/${id}`)).text);
  t.match(disabledPage, /Paused since .*: disabled by The admin\./, 'disabled, and by whom');
  t.match(disabledPage, 'Resume the endpoint');

  await h.startWorkers();
  await admin.post(`${w}/${id}/resume`, {});
  t.equal((await admin.post(`${w}/${id}/test`, {})).status, 303);
  await waitFor(
    () => h.receiver.requests.some((r) => r.path === '/moved'),
    'the resumed endpoint receives, at its new address',
  );
  await waitFor(async () => {
    const r = await h.pool.query("SELECT 1 FROM webhook_deliveries WHERE status = 'succeeded'");
    return r.rows.length === 1;
  }, 'recorded');

  t.match(text((await admin.get(`${w}/${id}/delete`)).text), 'cannot be undone', 'deleting asks first');
  const deleted = await admin.post(`${w}/${id}/delete`, {});
  t.equal(deleted.status, 303);
  const listPage = text((await admin.get(deleted.headers.get('location')!)).text);
  t.match(listPage, 'The endpoint is deleted.');
  t.match(listPage, 'Deleted endpoints');
  const log = text((await admin.get(`${w}/${id}`)).text);
  t.match(log, 'Deleted at', 'the deleted endpoint still opens');
  t.match(log, /webhook\.test .* Succeeded after 1 attempt/, 'with its delivery log');
  t.equal((await admin.get(`${w}/${id}/edit`)).status, 404, 'but nothing more is done with it');
});

t.test('an endpoint deleted through the API keeps its log readable in the console', async (t) => {
  const h = await consoleHarness(t);
  const endpoint = await endpointWithOneDelivery(h);
  const gone = await h.request(`/v1/webhooks/${endpoint.id}`, { method: 'DELETE', key: h.ws.live });
  t.equal(gone.status, 204);
  const viewer = await h.as('viewer');
  const page = await viewer.get(`/console/w/${h.ws.workspace.slug}/webhooks/${endpoint.id}`);
  t.equal(page.status, 200, 'the log of a deleted endpoint opens');
  t.match(text(page.text), /document\.uploaded .* Succeeded after 1 attempt/);
  t.match(text((await viewer.get(`/console/w/${h.ws.workspace.slug}/webhooks`)).text), h.receiver.url());
});

t.test('the plan limit refuses a console endpoint as it refuses the API', async (t) => {
  const h = await consoleHarness(t, { webhook_endpoints: 3 });
  const admin = await h.as('admin');
  const w = `/console/w/${h.ws.workspace.slug}/webhooks`;
  let made = 0;
  for (; made < 10; made++) {
    const answer = await admin.post(w, {
      url: h.receiver.url('hooks.test', `/n${made}`),
      events: 'lead.created',
      mode: 'test',
    });
    if (answer.status !== 303) {
      t.equal(answer.status, 400);
      t.match(text(answer.text), /reached its limit of \d+ webhook endpoints in test mode/);
      break;
    }
  }
  const api = await h.request('/v1/webhooks', {
    method: 'POST',
    key: h.ws.test,
    json: { url: h.receiver.url('hooks.test', '/api'), events: ['lead.created'] },
  });
  t.equal(api.status, 409, 'the API refuses the next one as well: the same limit');
  t.equal(made, 3, 'the console made as many as the plan allows');
});
