import t from 'tap';
import { leadBody, leadsFixture, streamTypes } from './helpers.js';

t.test('a submission matching a phone or an email is a duplicate and an enquiry on the timeline', async (t) => {
  const f = await leadsFixture(t);
  const first = await f.post(leadBody({ phone: '98111 22334', email: 'Same.Person@Example.com', message: 'first' }));
  t.equal(first.status, 201);
  const id = String(first.body.id);
  const before = await f.get(`/v1/leads/${id}`);

  const byPhone = await f.post(leadBody({ phone: '+91 98111-22334', email: 'other@example.com', message: 'second' }));
  t.equal(byPhone.status, 200);
  t.same(byPhone.body, { id, duplicate: true }, 'the LeadDuplicate body exactly');

  const byEmail = await f.post({ full_name: 'S P', email: 'same.person@example.COM', consent: true });
  t.same(byEmail.body, { id, duplicate: true }, 'email matches whatever its case');

  t.same(await streamTypes(f, id), ['lead.created', 'lead.enquiry_received', 'lead.enquiry_received']);
  const events = await f.services.store.readStream(`lead-${id}`);
  t.match(events[1]!.data, { message: 'second', matched_on: ['phone'], submission: { email: 'other@example.com' } });
  t.notOk('payload' in events[1]!.data, 'an enquiry is internal: no webhook payload');

  const after = await f.get(`/v1/leads/${id}`);
  t.equal(after.body.email, before.body.email, 'the lead keeps its own fields');
  t.ok(String(after.body.last_activity_at) >= String(before.body.last_activity_at), 'the enquiry is activity');
  const count = await f.pool.query('SELECT count(*)::int AS n FROM leads');
  t.equal(count.rows[0].n, 1);

  const sandbox = await f.post(leadBody({ phone: '98111 22334', email: 'same.person@example.com' }), { key: f.test });
  t.equal(sandbox.status, 201, 'the sandbox is another world: no duplicate of a live lead');
});

t.test('many simultaneous submissions of one person create exactly one lead', async (t) => {
  const f = await leadsFixture(t);
  const person = leadBody();
  // Some share only the phone, some only the email: all are the same person.
  const bodies = Array.from({ length: 40 }, (_, i) =>
    i % 3 === 0 ? person : i % 3 === 1 ? { ...person, email: `variant${i}@example.com` } : { ...person, phone: null, email: String(person.email).toUpperCase() },
  );
  const results = await Promise.all(bodies.map((b) => f.post(b)));
  const created = results.filter((r) => r.status === 201);
  const duplicates = results.filter((r) => r.status === 200);
  t.equal(created.length, 1, 'one 201');
  t.equal(duplicates.length, 39, 'the rest are 200 duplicates');
  const id = created[0]!.body.id;
  t.ok(duplicates.every((d) => d.body.id === id), 'every duplicate names the one lead');
  const count = await f.pool.query('SELECT count(*)::int AS n FROM leads');
  t.equal(count.rows[0].n, 1);
  const types = await streamTypes(f, String(id));
  t.equal(types.filter((x) => x === 'lead.enquiry_received').length, 39, 'every duplicate is an enquiry on the timeline');
});
