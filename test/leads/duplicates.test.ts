import t from 'tap';
import { toLeadEvent } from '../../src/domain/leads/events.js';
import { fold } from '../../src/domain/leads/evolve.js';
import { TestClock } from '../support/app.js';
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
  const digits = String(person.phone);
  const other = leadBody();
  // Group A all share the phone (typed differently, with or without an email); group B all share the email.
  const groupA = Array.from({ length: 30 }, (_, i) =>
    i % 3 === 0
      ? person
      : i % 3 === 1
        ? { ...person, email: `variant${i}@example.com` }
        : { ...person, phone: `+91 ${digits.slice(0, 5)} ${digits.slice(5)}`, email: null },
  );
  const groupB = Array.from({ length: 20 }, (_, i) => ({
    ...other,
    phone: i % 2 ? null : `8${String(100000000 + i)}`,
    email: String(other.email).toUpperCase(),
  }));
  const bodies = [...groupA, ...groupB].sort(() => Math.random() - 0.5);
  const results = await Promise.all(bodies.map((b) => f.post(b)));
  const statuses = results.map((r) => r.status);
  t.same([...new Set(statuses)].sort(), [200, 201], 'only 201 and 200 answers');
  const created = results.filter((r) => r.status === 201);
  t.equal(created.length, 2, 'one 201 per person');
  const byId = new Map<unknown, number>();
  for (const r of results) byId.set(r.body.id, (byId.get(r.body.id) ?? 0) + 1);
  t.same(
    [...byId.values()].sort((a, b) => a - b),
    [20, 30],
    "every answer names its person's one lead",
  );
  const count = await f.pool.query('SELECT count(*)::int AS n FROM leads');
  t.equal(count.rows[0].n, 2);
  for (const c of created) {
    const types = await streamTypes(f, String(c.body.id));
    t.equal(
      types.filter((x) => x === 'lead.enquiry_received').length,
      byId.get(c.body.id)! - 1,
      'every duplicate is an enquiry on the timeline',
    );
  }
});

t.test("an enquiry landing after a later PATCH does not move the lead's times back", async (t) => {
  // The race this stands for: an enquiry fixes its time, then waits for the lead's stream while a PATCH that holds it
  // takes a later time and commits first. The test clock steps back to put the enquiry's time before the PATCH's.
  const clock = new TestClock();
  const f = await leadsFixture(t, { now: clock.now });
  const person = leadBody();
  const id = String((await f.post(person)).body.id);
  clock.advance(2000);
  const patched = await f.patch(id, { temperature: 'hot' });
  t.equal(patched.status, 200);
  const patchedAt = String(patched.body.updated_at);
  clock.advance(-1000);
  t.equal((await f.post(person)).status, 200, 'the enquiry is taken');
  t.same(await streamTypes(f, id), ['lead.created', 'lead.updated', 'lead.enquiry_received']);

  const read = await f.get(`/v1/leads/${id}`);
  t.equal(read.body.updated_at, patchedAt, 'updated_at stays at the PATCH');
  t.equal(read.body.last_activity_at, patchedAt, 'so does last_activity_at');
  t.equal(read.body.temperature, 'hot');
  const replayed = fold((await f.services.store.readStream(`lead-${id}`)).map(toLeadEvent));
  t.same(replayed, read.body, 'replaying the history gives the read model');
  clock.advance(1001); // lists show only what changed before their own time
  const listed = await f.get('/v1/leads?limit=100');
  t.equal((listed.body.data as { updated_at: string }[])[0]!.updated_at, patchedAt, 'and the list');
  // The list hands on the stored text: after a capture, a PATCH and an enquiry it is still the Lead's fields in the
  // spec's order, written compactly, exactly as the read by id serialises it.
  const text = await (await f.request('/v1/leads?limit=100', { key: f.live })).text();
  t.ok(text.startsWith(`{"data":[${JSON.stringify(read.body)}]`), 'the listed row is the Lead as read, byte for byte');
});
