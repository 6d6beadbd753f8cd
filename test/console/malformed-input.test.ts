import t, { type Test } from 'tap';
import { memberOf } from '../identity/support.js';
import { consoleFixture, type ConsoleClient } from './support.js';

/**
 * Malformed input each console form answered with 500 on eed83c9: now a 400 page naming the field (or, for a path,
 * a 404), and never a 500. The NUL cases are refused by the console's shared checks before any handler runs, so the
 * ids in their paths need not name records.
 */
const SOME_ID = '0190f7a6-0000-7000-8000-000000000001';
const OTHER_ID = '0190f7a6-0000-7000-8000-000000000002';

t.test('malformed console input is a 400 page with the field named, never a 500', async (t) => {
  const f = await consoleFixture(t);
  const slug = f.ws.workspace.slug;
  const w = `/console/w/${slug}`;
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  const created = await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { full_name: 'Zoya Mirza', phone: '+919811199900', consent: true },
  });
  const leadId = ((await created.json()) as { id: string }).id;

  const refusedWithNul = async (
    t: Test,
    c: ConsoleClient,
    path: string,
    form: Record<string, string>,
    field: string,
  ) => {
    const answer = await c.post(path, form);
    t.equal(answer.status, 400, `${path}: ${field} with a NUL byte is refused, not a 500`);
    t.match(answer.text, /NUL character/, `${path}: the page says why`);
    t.match(answer.text, new RegExp(field.replaceAll('_', '[ _]')), `${path}: and names ${field}`);
  };

  t.test('a NUL byte in a task title', async (t) => {
    await refusedWithNul(
      t,
      owner,
      `${w}/tasks`,
      { lead_id: leadId, title: 'Call\u0000back', assignee: '', due_at: '2026-12-01T10:00' },
      'title',
    );
  });

  t.test('a NUL byte in an invoice line', async (t) => {
    await refusedWithNul(
      t,
      owner,
      `${w}/invoices`,
      {
        lead_id: leadId,
        currency: 'INR',
        description: 'Visa\u0000fee',
        quantity: '1',
        unit_amount: '1500',
        tax_percent: '0',
        due_date: '2026-12-01',
      },
      'description',
    );
  });

  t.test('a NUL byte in a payment reference', async (t) => {
    await refusedWithNul(
      t,
      owner,
      `${w}/invoices/${SOME_ID}/payments`,
      { amount: '100', method: 'bank_transfer', reference: 'UTR\u00001' },
      'reference',
    );
  });

  t.test('a NUL byte in a refund reason', async (t) => {
    await refusedWithNul(
      t,
      owner,
      `${w}/invoices/${SOME_ID}/payments/${OTHER_ID}/refunds`,
      { amount: '100', reason: 'over\u0000paid' },
      'reason',
    );
  });

  t.test('a NUL byte in a token name', async (t) => {
    await refusedWithNul(
      t,
      owner,
      '/console/account/tokens',
      { workspace: slug, name: 'ci\u0000', days: '30' },
      'name',
    );
  });

  t.test('a NUL byte in a member name', async (t) => {
    await refusedWithNul(
      t,
      owner,
      `${w}/members/invite`,
      { name: 'Ne\u0000w', email: 'new.member@northstar.example', role: 'viewer' },
      'name',
    );
  });

  t.test('a lead_id that is not a uuid', async (t) => {
    const answer = await owner.post(`${w}/tasks`, {
      lead_id: 'not-a-uuid',
      title: 'Call back',
      assignee: '',
      due_at: '2026-12-01T10:00',
    });
    t.equal(answer.status, 400, 'refused, not a 500');
    t.match(answer.text, /lead[ _]id/);
  });

  // The lead form reads its follow-up in the workspace's zone (momentOf), which refuses a date that does not exist.
  t.test('a follow-up date that does not exist', async (t) => {
    const answer = await owner.post(`${w}/leads/${leadId}`, { follow_up: '2026-13-45T99:99', note: '' });
    t.equal(answer.status, 400, 'refused, not a 500');
    t.match(answer.text, /date and time/);
  });

  t.test('a query-string key given twice', async (t) => {
    const answer = await owner.get(`${w}/leads?q=a&q=b`);
    t.equal(answer.status, 400, 'refused, not a 500');
    t.match(answer.text, /\bq\b/);
  });

  t.test('a Referer that is not an address, on task complete', async (t) => {
    const made = await owner.post(`${w}/tasks`, {
      lead_id: leadId,
      title: 'Call back',
      assignee: '',
      due_at: '2026-12-01T10:00',
    });
    t.equal(made.status, 303);
    const list = await owner.get(`${w}/tasks?lead=${leadId}`);
    const taskId = /tasks\/([0-9a-f-]{36})\/complete/.exec(list.text)?.[1];
    t.ok(taskId, 'the task is listed with its complete button');
    const body = new URLSearchParams({ _csrf: await owner.csrf() });
    const answer = await fetch(`${f.app.baseUrl}${w}/tasks/${taskId}/complete`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie: owner.cookie!,
        origin: f.app.baseUrl,
        referer: 'not a url',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body,
    });
    t.equal(answer.status, 303, 'completed, and sent back to the task list');
    t.equal(answer.headers.get('location'), `${w}/tasks?done=completed`, 'which says what happened');
  });

  t.test('a declared schema refuses with its field message: on the route’s form, or on a list', async (t) => {
    const onForm = await owner.post(`${w}/audit/verify`, { anchor: 'a\u0001b' });
    t.equal(onForm.status, 400);
    t.match(onForm.text, /<form method="post" action="[^"]*\/audit\/verify"/, 'the verify form again');
    t.match(onForm.text, /This is not a head/, 'with the anchor’s message');
    const listed = await owner.get(`${w}/documents?lead=${leadId}&lead=${leadId}`);
    t.equal(listed.status, 400);
    t.match(listed.text, /<li><strong>lead<\/strong>: This is not the id of a record\.<\/li>/, 'the field and why');
    const notAnId = await owner.get(`${w}/documents?lead=not-a-uuid`);
    t.equal(notAnId.status, 400, 'a query id that is not one');
  });

  t.test('a body the console cannot read is refused in the form its sender reads, never a 500', async (t) => {
    const origin = f.app.baseUrl;
    const errorBody = async (answer: Response) => {
      const body = (await answer.json()) as Record<string, unknown>;
      t.equal(body.request_id, answer.headers.get('request-id'), 'the Error body carries the request id');
      return body;
    };
    // As an outside test sent it: a truncated JSON body to an open form, with no session.
    const truncated = await fetch(`${origin}/console/forgot`, {
      method: 'POST',
      headers: { origin, 'content-type': 'application/json' },
      body: '{"_csrf":',
    });
    t.equal(truncated.status, 400, 'truncated JSON: 400, not a 500');
    t.match(await errorBody(truncated), { error: 'invalid_json', message: String });

    const unfilled = await fetch(`${origin}/console/sign-in`, {
      method: 'POST',
      headers: { origin, 'content-type': 'application/json' },
      body: '{}',
    });
    t.equal(unfilled.status, 400, 'a JSON form without its fields');
    t.match(await errorBody(unfilled), { error: 'validation_failed', fields: { email: String, password: String } });

    // A route whose answers declare the Error shape for a 404: the console's refusal is one.
    const missing = await fetch(`${origin}${w}/tasks/${SOME_ID}`, {
      headers: { cookie: owner.cookie!, 'content-type': 'application/json' },
    });
    t.equal(missing.status, 404, 'a script asking for a record that does not exist');
    t.match(await errorBody(missing), { error: 'not_found', message: String });

    const token = encodeURIComponent(await owner.csrf());
    const noBoundary = await fetch(`${origin}${w}/documents?lead=${leadId}&_csrf=${token}`, {
      method: 'POST',
      headers: { origin, cookie: owner.cookie!, 'content-type': 'multipart/form-data' },
      body: '--x\r\nContent-Disposition: form-data; name="type"\r\n\r\npassport\r\n--x--\r\n',
    });
    t.equal(noBoundary.status, 400, 'an upload without a multipart boundary');
    t.match(await noBoundary.text(), /The form could not be read/, 'a page that says so');

    // The reject form refused by its schema, for a document that does not exist: that document's 404 page.
    const rejected = await owner.post(`${w}/documents/${SOME_ID}/reject`, {});
    t.equal(rejected.status, 404, 'the form again for no such document: not found, not a 500');
    t.match(rejected.text, /<!doctype html>/i);
  });

  t.test('a malformed id in a path is not found, not a 500', async (t) => {
    for (const path of [`${w}/documents/not-a-uuid`, `${w}/tasks/not-a-uuid`, `${w}/leads/%00`]) {
      const answer = await owner.get(path);
      t.equal(answer.status, 404, path);
    }
  });
});
