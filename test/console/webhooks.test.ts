import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { ensureAccount, setPassword } from '../../src/identity/accounts.js';
import { ROLES, type Role } from '../../src/identity/permissions.js';
import { PAUSE_THRESHOLD } from '../../src/domain/webhooks/endpoint.js';
import { everyRole, memberOf } from '../identity/support.js';
import { resourcePayload, webhookHarness, type Harness } from '../webhooks/support/harness.js';
import { waitFor } from '../webhooks/support/receiver.js';
import { ConsoleClient, PASSWORD } from './support.js';
import { can } from '../../src/identity/permissions.js';
import { seedWorkspace } from '../support/app.js';
import { seedDeliveries } from './lists/support.js';
import { parse } from 'csv-parse/sync';

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
  const replays = await h.pool.query<{ only_failed: boolean; queued: number; kinds: string[] | null }>(
    'SELECT only_failed, queued, kinds FROM webhook_replays WHERE endpoint_id = $1',
    [endpoint.id],
  );
  t.same(
    replays.rows,
    [{ only_failed: true, queued: PAUSE_THRESHOLD, kinds: null }],
    'the retry is one replay of the failed events (POST /v1/webhooks/{id}/replay with only_failed)',
  );
  const tooOld = new Date(Date.now() - 40 * 86_400_000).toISOString().slice(0, 16);
  const refused = await owner.get(`${w}/${endpoint.id}/retry-failed?since=${tooOld}`);
  t.equal(refused.status, 400, 'more than 30 days back, as the replay refuses it');
  t.match(text(refused.text), /The time must be within the last 30 days/, 'said next to the time');
  const refusedPost = await owner.post(`${w}/${endpoint.id}/retry-failed`, { since: tooOld });
  t.equal(refusedPost.status, 400);
  t.equal(
    (await h.pool.query('SELECT 1 FROM webhook_replays WHERE endpoint_id = $1', [endpoint.id])).rows.length,
    1,
    'a refused retry queues and records nothing',
  );

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
  const rows = (page: string) => [...page.matchAll(/<td>[^<]+<code>([a-z._]+)<\/code><\/td>/g)].map((m) => m[1]).sort();
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

const csvRows = (body: string): string[][] => parse(body.replace(/^\uFEFF/, ''), { relaxColumnCount: false });
const deliveryIdsIn = (page: string) => [...page.matchAll(/name="ids" value="([0-9a-f-]{36})"/g)].map((m) => m[1]!);

t.test('the delivery log is a list: sorts, a count, pages, a page size, CSV by role, one workspace only', async (t) => {
  const h = await consoleHarness(t);
  const endpoint = await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] });
  const now = h.services.now();
  const formula = '=HYPERLINK("http://x.example")';
  const ids = await seedDeliveries(h.pool, {
    tenantId: h.ws.workspace.id,
    endpointId: endpoint.id,
    n: 60,
    now,
    error: formula,
  });
  const slug = h.ws.workspace.slug;
  const base = `/console/w/${slug}/webhooks/${endpoint.id}`;
  const admin = await h.as('admin');
  t.equal((await admin.post(`/console/w/${slug}/settings`, { time_zone: 'Asia/Kolkata' })).status, 303, 'zone set');
  const owner = await h.as('owner');

  const first = await owner.get(base);
  t.equal(first.status, 200);
  t.match(text(first.text), '60 deliveries; 50 on this page', 'an exact count');
  t.same(deliveryIdsIn(first.text), ids.slice(0, 50), 'newest first, 50 a page by default');
  t.match(first.text, /aria-sort="descending"/, 'the sort said aloud');

  // 25 a page: next, next, then previous again, each row once.
  const seen: string[] = [];
  let page = await owner.get(`${base}?size=25`);
  seen.push(...deliveryIdsIn(page.text));
  for (;;) {
    const next = /<a href="([^"]+)" rel="next">/.exec(page.text)?.[1]?.replaceAll('&amp;', '&');
    if (!next) break;
    t.match(next, new RegExp(`^${base}\\?`), 'the pages are the endpoint page');
    page = await owner.get(next);
    seen.push(...deliveryIdsIn(page.text));
  }
  t.same(seen, ids, 'three pages of 25, 25 and 10: every delivery once, in order');
  const previous = /<a href="([^"]+)" rel="prev">/.exec(page.text)?.[1]?.replaceAll('&amp;', '&');
  t.same(deliveryIdsIn((await owner.get(previous!)).text), ids.slice(25, 50), 'previous goes back a page');

  const byAttempts = deliveryIdsIn((await owner.get(`${base}?sort=attempts&dir=desc&size=200`)).text);
  t.same(byAttempts.slice(0, 15).sort(), ids.filter((_, i) => i % 4 === 1).sort(), 'three attempts first');
  const byState = text((await owner.get(`${base}?sort=state&size=200`)).text);
  t.ok(byState.indexOf('Succeeded after') < byState.indexOf('Failing: 2 attempts'), 'by state: succeeded first');
  const byEvent = (await owner.get(`${base}?sort=event&size=200`)).text.split('<tbody>')[1]!;
  t.match(byEvent, /<td>Document rejected <code>document\.rejected<\/code><\/td>/);
  t.ok(byEvent.indexOf('document.rejected') < byEvent.indexOf('document.uploaded'), 'by event kind, up');
  for (const sort of ['answer', 'changed', 'created'])
    t.equal((await owner.get(`${base}?sort=${sort}&dir=asc`)).status, 200, `sorted by ${sort}`);

  t.match(text((await owner.get(`${base}?state=failing`)).text), '30 deliveries', 'the failing filter counts');
  const refused = await owner.get(`${base}?state=lost&since=yesterday`);
  t.equal(refused.status, 400, 'a filter it cannot read');
  t.match(text(refused.text), /Choose one of the options.*Enter a date and time/, 'each refusal by its field');
  t.equal((await owner.get(`${base}?sort=body`)).status, 400, 'a sort not offered is refused');

  // The file: labels as shown, the zone in the time headers, no formula, recorded.
  const manager = await h.as('manager');
  const file = await manager.get(`${base}/export.csv?state=failed`);
  t.equal(file.status, 200);
  t.match(file.headers.get('content-disposition'), /filename="deliveries-[a-z0-9-]+-\d{4}-\d\d-\d\d\.csv"/);
  const rows = csvRows(file.text);
  t.same(rows[0], [
    'Event',
    'Created (Asia/Kolkata)',
    'State',
    'Attempts',
    'Last answer',
    'Last change (Asia/Kolkata)',
    'Details',
  ]);
  t.equal(rows.length, 16, 'the 15 failed for good');
  const newestFailed = ids[1]!;
  const wall = new Intl.DateTimeFormat('en-CA', {
    timeZone: 'Asia/Kolkata',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  })
    .format(new Date(now.getTime() - 60_000))
    .replace(', ', ' ');
  t.same(rows[1], [
    'Document rejected',
    wall,
    'Failed for good after 3 attempts',
    '3',
    `'${formula}`,
    rows[1]![5],
    rows[1]![6],
  ]);
  t.match(rows[1]![6], newestFailed, 'the ids as the details show them');
  const retrying = csvRows((await manager.get(`${base}/export.csv?state=retrying`)).text);
  t.match(retrying[1]![2], /^Failing: 2 attempts so far, next retry \d{4}-\d\d-\d\d \d\d:\d\d$/, 'in words');
  t.equal(retrying[1]![4], 'HTTP 503');
  const picked = await manager.post(`${base}/export`, { ids: [ids[0]!], scope: 'ids', query: 'state=succeeded' });
  t.same(
    csvRows(picked.text).map((r) => r[2]),
    ['State', 'Succeeded after 1 attempt'],
    'a selection: the ticked row',
  );
  const events = await h.pool.query<{ data: Record<string, unknown> }>(
    `SELECT data FROM events WHERE tenant_id = $1 AND type = 'list.exported' ORDER BY position`,
    [h.ws.workspace.id],
  );
  t.same(
    events.rows[0]!.data,
    { list: 'deliveries', filter: `endpoint=${endpoint.id}&state=failed`, scope: 'filter', count: 15 },
    'the audit trail names the endpoint and the filter',
  );

  for (const role of ROLES) {
    const c = await h.as(role);
    const asked = await c.get(`${base}/export.csv`);
    t.equal(asked.status, can(role, 'lists.export') && can(role, 'webhooks.view') ? 200 : 403, `${role}: the file`);
    const shown = await c.get(base);
    if (shown.status !== 200) continue;
    t.equal(shown.text.includes('export.csv'), can(role, 'lists.export'), `${role}: the link only when allowed`);
    t.equal(shown.text.includes('Resend this delivery'), can(role, 'webhooks.resend'), `${role}: resend offered`);
  }

  // Resend goes through its confirmation.
  const confirm = await owner.get(`${base}/deliveries/${ids[1]}/resend`);
  t.equal(confirm.status, 200);
  t.match(text(confirm.text), /Send the Document rejected delivery of .* again/);
  t.equal((await owner.post(`${base}/deliveries/${ids[1]}/resend`, { confirm: 'yes' })).status, 303, 'resent');

  // Another workspace's endpoint (its owner is this one's too) is not found through this workspace's pages.
  const other = await seedWorkspace(h, everyRole());
  const theirs = await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] }, other.live);
  await seedDeliveries(h.pool, { tenantId: other.workspace.id, endpointId: theirs.id, n: 3, now });
  const elsewhere = `/console/w/${slug}/webhooks/${theirs.id}`;
  t.equal((await owner.get(elsewhere)).status, 404, 'another workspace’s endpoint: not found');
  t.equal((await owner.get(`${elsewhere}/export.csv`)).status, 404, 'nor its file');
  t.equal((await owner.post(`${elsewhere}/export`, { ids: [], scope: 'matching' })).status, 404);
  t.equal((await owner.get(`${elsewhere}/deliveries/${ids[0]}/resend`)).status, 404);
  t.equal((await owner.get(`${base}/deliveries/${randomUUID()}/resend`)).status, 404, 'a delivery of no endpoint');
});

t.test(
  'the rate limit on the endpoint page: set, refused when not 1 to 1000, removed; by role; one workspace',
  async (t) => {
    const h = await consoleHarness(t);
    const endpoint = await h.createEndpoint({ url: h.receiver.url('hooks.test'), events: ['lead.created'] });
    const w = `/console/w/${h.ws.workspace.slug}/webhooks`;
    const rateOfApi = async () =>
      (
        (await (await h.request('/v1/webhooks', { key: h.ws.live })).json()) as {
          data: { rate_limit_per_second: unknown }[];
        }
      ).data[0]!.rate_limit_per_second;
    const admin = await h.as('admin');
    t.match(text((await admin.get(`${w}/${endpoint.id}`)).text), 'Rate limit no limit', 'no limit shown');
    for (const typed of ['0', '1001', '2.5', 'five']) {
      const refused = await admin.post(`${w}/${endpoint.id}/rate-limit`, { rate_limit_per_second: typed });
      t.equal(refused.status, 400, `${typed} is refused`);
      t.match(refused.text, /id="f-rate_limit_per_second-error"/, `${typed}: the field says why`);
    }
    t.equal(await rateOfApi(), null, 'nothing refused was kept');
    const set = await admin.post(`${w}/${endpoint.id}/rate-limit`, { rate_limit_per_second: '5' });
    t.equal(set.status, 303);
    const shown = text((await admin.get(set.headers.get('location')!)).text);
    t.match(shown, 'The rate limit is changed', 'the page says what it did');
    t.match(shown, 'at most 5 deliveries a second');
    t.equal(await rateOfApi(), 5, 'the API shows the rate set in the console');
    t.equal((await admin.post(`${w}/${endpoint.id}/rate-limit`, { rate_limit_per_second: '' })).status, 303);
    t.equal(await rateOfApi(), null, 'an empty field removes the limit');
    const edit = await admin.get(`${w}/${endpoint.id}/edit`);
    t.match(edit.text, /name="rate_limit_per_second"/, 'the change form has the rate too');
    const refusedEdit = await admin.post(`${w}/${endpoint.id}/edit`, {
      url: h.receiver.url('hooks.test'),
      events: 'lead.created',
      rate_limit_per_second: '0',
    });
    t.equal(refusedEdit.status, 400, 'the change form refuses a rate of 0');
    t.match(refusedEdit.text, /id="f-rate_limit_per_second-error"/);
    const edited = await admin.post(`${w}/${endpoint.id}/edit`, {
      url: h.receiver.url('hooks.test'),
      events: 'lead.created',
      rate_limit_per_second: '12',
    });
    t.equal(edited.status, 303);
    t.equal(await rateOfApi(), 12, 'the change form sets the rate');
    t.match(
      (await admin.get(`${w}/${endpoint.id}/edit`)).text,
      /name="rate_limit_per_second"[^>]*value="12"|value="12"[^>]*name="rate_limit_per_second"/s,
    );
    await admin.post(`${w}/${endpoint.id}/rate-limit`, { rate_limit_per_second: '' });
    const made = await admin.post(w, {
      url: h.receiver.url('hooks.test', '/second'),
      events: 'lead.created',
      mode: 'test',
      rate_limit_per_second: '3',
    });
    t.equal(made.status, 303, 'an endpoint made in the console with a rate');
    const testEndpoints = (
      (await (await h.request('/v1/webhooks', { key: h.ws.test })).json()) as {
        data: { rate_limit_per_second: unknown }[];
      }
    ).data;
    t.same(
      testEndpoints.map((e) => e.rate_limit_per_second),
      [3],
      'made with its rate',
    );

    for (const role of ROLES) {
      const client = await h.as(role);
      const page = await client.get(`${w}/${endpoint.id}`);
      const mayManage = can(role, 'webhooks.manage');
      if (page.status === 200)
        t.equal(page.text.includes('/rate-limit"'), mayManage, `${role}: the form shown only to who may manage`);
      const tried = await client.post(`${w}/${endpoint.id}/rate-limit`, { rate_limit_per_second: '7' });
      if (mayManage) t.equal(tried.status, 303, `${role} may change the rate`);
      else t.equal(tried.status, 403, `${role} may not change the rate`);
      if (mayManage) await client.post(`${w}/${endpoint.id}/rate-limit`, { rate_limit_per_second: '' });
    }
    t.equal(await rateOfApi(), null);

    const other = await seedWorkspace(h, everyRole());
    for (const user of other.workspace.settings.users) {
      const account = await ensureAccount(h.pool, user, h.services.now());
      await setPassword(h.pool, account.id, PASSWORD, h.services.now());
    }
    const stranger = new ConsoleClient(h);
    await stranger.signIn(memberOf('admin'));
    const foreign = await stranger.post(`/console/w/${other.workspace.slug}/webhooks/${endpoint.id}/rate-limit`, {
      rate_limit_per_second: '1',
    });
    t.equal(foreign.status, 404, "another workspace's endpoint is not found there");
    t.equal(await rateOfApi(), null, 'and nothing changed');
  },
);
