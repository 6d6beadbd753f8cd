import t, { type Test } from 'tap';
import { liveKeys } from '../../src/commands/leads/erase-copies.js';
import { Gates, raceFixture, waitForLockWaiters, type Person, type RaceFixture } from './erasure-race-support.js';

// An erasure and a write creating personal data for the same person serialise on the person's lock
// (docs/decisions.md, "Erasure and writes"). Each side is held at each point; afterwards nothing of the person can be
// read anywhere: tables, the log as the service opens it, stored files and delivery bodies.

type Write = 'task' | 'invoice' | 'document';
const WRITES: Write[] = ['task', 'invoice', 'document'];
/** A document waits for its virus scan (no clamd here): 202. */
const CREATED = [201, 202];

function write(f: RaceFixture, kind: Write, p: Person): Promise<Response> {
  if (kind === 'task') return f.createTask(p, `Call ${p.name}`);
  if (kind === 'invoice') return f.issueInvoice(p, `Visa filing for ${p.name}, ${p.phone}`);
  return f.uploadDocument(p, `${p.name} passport ${p.email}`);
}

async function assertErased(t: Test, f: RaceFixture, p: Person): Promise<void> {
  await f.fanOut();
  t.same(await f.traces(p), [], 'nothing of the person is left anywhere');
  t.equal(await liveKeys(f.h.pool, f.h.ws.workspace.id, p.id), 0, 'no stream of the person keeps a data key');
}

t.test('reproduction (a): a task created while the erasure waits for the lead stream lock is erased too', async (t) => {
  const f = await raceFixture(t);
  const p = await f.person();
  await f.fanOut();
  const holder = await f.h.pool.connect();
  await holder.query('BEGIN');
  await holder.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`lead-${p.id}`]);
  const erasing = f.erase(p);
  await waitForLockWaiters(f.h);
  t.equal((await f.createTask(p, `Call ${p.name}`)).status, 201, 'the task is created meanwhile');
  await holder.query('COMMIT');
  holder.release();
  t.equal((await erasing).status, 200);
  await assertErased(t, f, p);
});

t.test('reproduction (b): a task whose insert is held while the erasure runs keeps no live key', async (t) => {
  const f = await raceFixture(t);
  const p = await f.person();
  await f.fanOut();
  const holder = await f.h.pool.connect();
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE tasks IN SHARE MODE');
  const creating = f.createTask(p, `Call ${p.name}`);
  await waitForLockWaiters(f.h, 1);
  const erasing = f.erase(p);
  await waitForLockWaiters(f.h, 2);
  await holder.query('COMMIT');
  holder.release();
  const [created, erased] = await Promise.all([creating, erasing]);
  t.equal(created.status, 201);
  t.equal(erased.status, 200);
  await assertErased(t, f, p);
  const task = (await created.json()) as { id: string };
  const opened = await f.h.services.store.readStream(`task-${task.id}`);
  t.notMatch(JSON.stringify(opened), p.name, "the task's events, as the service opens them, hold no title");
});

t.test('reproduction (c): deliveries the fan-out inserts while the erasure runs carry no personal value', async (t) => {
  const f = await raceFixture(t);
  await f.fanOut();
  const p = await f.person();
  t.equal((await f.issueInvoice(p, `Visa filing for ${p.name}`)).status, 201);
  const holder = await f.h.pool.connect();
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE webhook_deliveries IN SHARE MODE');
  const fanning = f.fanOutOnce();
  await waitForLockWaiters(f.h, 1);
  const erasing = f.erase(p);
  await waitForLockWaiters(f.h, 2);
  await holder.query('COMMIT');
  holder.release();
  t.ok((await fanning).deliveries > 0, 'the fan-out made its deliveries');
  t.equal((await erasing).status, 200);
  await assertErased(t, f, p);
});

for (const point of ['erasure-locked', 'erasure-keys', 'erasure-commit'] as const)
  t.test(`a write arriving while the erasure is held at ${point} is refused with lead_erased`, async (t) => {
    const f = await raceFixture(t);
    const gates = new Gates(t);
    for (const kind of WRITES) {
      const p = await f.person();
      const held = gates.hold(point, p.id);
      const erasing = f.erase(p);
      await held.reached;
      const writing = write(f, kind, p);
      await waitForLockWaiters(f.h);
      held.release();
      t.equal((await erasing).status, 200, `${kind}: erased`);
      const refused = await writing;
      t.equal(refused.status, 409, `${kind}: refused`);
      t.match(await refused.json(), { error: 'lead_erased' });
      await assertErased(t, f, p);
    }
  });

t.test('an erasure arriving while a write holds the person is applied to what the write created', async (t) => {
  const f = await raceFixture(t);
  const gates = new Gates(t);
  for (const kind of WRITES) {
    const p = await f.person();
    const held = gates.hold('person-locked', p.id);
    const writing = write(f, kind, p);
    await held.reached;
    const erasing = f.erase(p);
    await waitForLockWaiters(f.h);
    held.release();
    t.ok(CREATED.includes((await writing).status), `${kind}: created`);
    t.equal((await erasing).status, 200, `${kind}: erased`);
    await assertErased(t, f, p);
  }
});

t.test('the fan-out renders no personal value for a person erased after it read their events', async (t) => {
  const f = await raceFixture(t);
  const gates = new Gates(t);
  await f.fanOut();
  const p = await f.person();
  t.equal((await f.issueInvoice(p, `Visa filing for ${p.name}`)).status, 201);
  const held = gates.hold('fanout-read');
  const fanning = f.fanOutOnce();
  await held.reached;
  t.equal((await f.erase(p)).status, 200, 'the erasure does not wait for the fan-out');
  held.release();
  t.ok((await fanning).deliveries > 0, 'the fan-out made its deliveries');
  await assertErased(t, f, p);
});

t.test('an erasure waits for a fan-out holding the person, then scrubs what it inserted', async (t) => {
  const f = await raceFixture(t);
  const gates = new Gates(t);
  await f.fanOut();
  const p = await f.person();
  t.equal((await f.issueInvoice(p, `Visa filing for ${p.name}`)).status, 201);
  const held = gates.hold('fanout-insert', p.id);
  const fanning = f.fanOutOnce();
  await held.reached;
  const erasing = f.erase(p);
  await waitForLockWaiters(f.h);
  held.release();
  t.ok((await fanning).deliveries > 0);
  t.equal((await erasing).status, 200);
  await assertErased(t, f, p);
});

t.test('a second erasure scrubs again what is left of the person', async (t) => {
  const f = await raceFixture(t);
  const p = await f.person();
  const task = (await (await f.createTask(p, `Call ${p.name}`)).json()) as { id: string };
  await f.fanOut();
  const sent = await f.h.pool.query<{ id: string; body: string }>(
    "SELECT id, body FROM webhook_deliveries WHERE body LIKE '%' || $1 || '%'",
    [p.email],
  );
  t.ok(sent.rows.length > 0, 'a delivery body names the person before');
  t.equal((await f.erase(p)).status, 200);
  // What a write racing an erasure could leave behind before the person's lock: a body and a read row.
  for (const row of sent.rows)
    await f.h.pool.query('UPDATE webhook_deliveries SET body = $2 WHERE id = $1', [row.id, row.body]);
  await f.h.pool.query("UPDATE tasks SET body = jsonb_set(body::jsonb, '{title}', to_jsonb($2::text)) WHERE id = $1", [
    task.id,
    `Call ${p.name}`,
  ]);
  t.not((await f.traces(p)).length, 0, 'left behind');
  const again = await f.erase(p);
  t.equal(again.status, 200);
  t.match(await again.json(), { erased_now: false, streams: 0 });
  t.same(await f.traces(p), [], 'the second erasure scrubbed it');
});
