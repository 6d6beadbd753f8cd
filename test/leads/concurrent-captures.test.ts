import t from 'tap';
import { leadBody, leadsFixture } from './helpers.js';

/**
 * Captures of one workspace and mode arriving together: new people, a duplicate and an Idempotency-Key sent twice
 * must each get the answer they would get alone.
 */
t.test('captures arriving together each get the answer they would get alone', async (t) => {
  const f = await leadsFixture(t);

  const existing = await f.post(leadBody());
  t.equal(existing.status, 201);
  const existingPhone = (await f.get(`/v1/leads/${String(existing.body.id)}`)).body.phone as string;

  const people = Array.from({ length: 5 }, () => leadBody());
  const idempotent = leadBody();
  const submissions = [
    ...people.map((body) => f.post(body)),
    f.post(leadBody({ phone: existingPhone })),
    f.post(idempotent, { headers: { 'idempotency-key': 'shared-1' } }),
    f.post(idempotent, { headers: { 'idempotency-key': 'shared-1' } }),
  ];
  const answers = await Promise.all(submissions);

  const created = answers.slice(0, 5);
  t.same(
    created.map((a) => [a.status, a.body.duplicate]),
    Array.from({ length: 5 }, () => [201, false]),
    'five new people, five new leads',
  );
  t.equal(new Set(created.map((a) => a.body.id)).size, 5, 'five different ids');
  t.same(
    [answers[5]!.status, answers[5]!.body],
    [200, { id: existing.body.id, duplicate: true }],
    'the duplicate found the existing lead',
  );
  // The two requests with one key share a lock, so they ran one after the other, in either order.
  const keyed = [answers[6]!, answers[7]!];
  t.same(
    keyed.map((a) => a.status),
    [201, 201],
  );
  t.same(keyed[0]!.body, keyed[1]!.body, 'the repeated key answered the first answer');
  t.same(
    keyed.map((a) => a.headers.get('idempotent-replayed')).sort(),
    ['true', null].sort(),
    'one of them was a replay',
  );

  for (const a of created)
    t.equal((await f.get(`/v1/leads/${String(a.body.id)}`)).status, 200, 'each new lead reads back');
  const enquiries = await f.pool.query(`SELECT 1 FROM events WHERE stream_id = $1 AND type = 'lead.enquiry_received'`, [
    `lead-${String(existing.body.id)}`,
  ]);
  t.equal(enquiries.rowCount, 1, 'one enquiry on the existing lead');
});
