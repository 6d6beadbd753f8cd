import t from 'tap';
import { PostgresEventStore } from '../../src/events/postgres-event-store.js';
import { intentPrefix } from '../../src/leads/write-intents.js';
import { context } from '../support/event-store-scenarios.js';
import { leadBody, leadsFixture } from './helpers.js';

/**
 * Captures of one workspace and mode that wait together share a database transaction. Here both transaction slots
 * of the workspace are held while submissions queue, so the queued ones run together: new people, a duplicate and
 * an Idempotency-Key sent twice must each get the answer they would get alone.
 */
t.test('captures sharing a transaction each get the answer they would get alone', async (t) => {
  const f = await leadsFixture(t);
  const store = f.services.store;
  if (!(store instanceof PostgresEventStore)) throw new Error('the PostgreSQL event store is expected');
  const group = intentPrefix(f.workspace.id, false);

  const existing = await f.post(leadBody());
  t.equal(existing.status, 201);
  const existingPhone = (await f.get(`/v1/leads/${String(existing.body.id)}`)).body.phone as string;

  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let holding = 0;
  const holders = [0, 1].map(() =>
    store.transact(
      context(),
      [],
      async (tx) => {
        await tx.sql.query('SELECT 1');
        holding += 1;
        await held;
      },
      { coalesce: group },
    ),
  );
  while (holding < 2) await new Promise((resolve) => setTimeout(resolve, 5));

  const people = Array.from({ length: 5 }, () => leadBody());
  const idempotent = leadBody();
  const submissions = [
    ...people.map((body) => f.post(body)),
    f.post(leadBody({ phone: existingPhone })),
    f.post(idempotent, { headers: { 'idempotency-key': 'shared-1' } }),
    f.post(idempotent, { headers: { 'idempotency-key': 'shared-1' } }),
  ];
  const deadline = Date.now() + 10_000;
  while (store.waitingToCoalesce(group) < submissions.length && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 5));
  t.equal(
    store.waitingToCoalesce(group),
    submissions.length,
    'every submission waits for the workspace’s next transaction',
  );
  release();
  await Promise.all(holders);
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
  // The two requests with one key share a lock, so they ran in different transactions, in either order.
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

  const txIds = await f.pool.query<{ tx: string }>(
    `SELECT DISTINCT tx_id::text AS tx FROM events
      WHERE (stream_id = ANY($1::text[]) AND type = 'lead.created') OR (stream_id = $2 AND type = 'lead.enquiry_received')`,
    [created.map((a) => `lead-${String(a.body.id)}`), `lead-${String(existing.body.id)}`],
  );
  t.equal(txIds.rowCount, 1, 'the five new leads and the enquiry were written in one transaction');
  for (const a of created)
    t.equal((await f.get(`/v1/leads/${String(a.body.id)}`)).status, 200, 'each new lead reads back');
  const enquiries = await f.pool.query(`SELECT 1 FROM events WHERE stream_id = $1 AND type = 'lead.enquiry_received'`, [
    `lead-${String(existing.body.id)}`,
  ]);
  t.equal(enquiries.rowCount, 1, 'one enquiry on the existing lead');
});
