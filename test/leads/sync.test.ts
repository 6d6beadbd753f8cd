import t from 'tap';
import { recordSql } from '../support/sql-recorder.js';
import { TestClock, seedWorkspace } from '../support/app.js';
import { leadBody, leadsFixture, type LeadsFixture } from './helpers.js';

const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );

type Page = { data: Record<string, unknown>[]; next_cursor: string | null };

async function page(f: LeadsFixture, query: string, key = f.live): Promise<Page> {
  const res = await f.get(`/v1/leads${query}`, key);
  if (res.status !== 200) throw new Error(`list answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as unknown as Page;
}

/** Walks every page from updated_since (or the start), returning the leads in the order served. */
async function walk(f: LeadsFixture, limit: number, since?: string): Promise<Record<string, unknown>[]> {
  const seen: Record<string, unknown>[] = [];
  let cursor: string | null = null;
  do {
    const params = new URLSearchParams({ limit: String(limit) });
    if (since) params.set('updated_since', since);
    if (cursor) params.set('cursor', cursor);
    const p = await page(f, `?${params}`);
    seen.push(...p.data);
    cursor = p.next_cursor;
  } while (cursor);
  return seen;
}

t.test(
  'pages ascend by (updated_at, id), limit 1 to 100 (default 25), next_cursor null on the last page',
  async (t) => {
    const clock = new TestClock();
    const f = await leadsFixture(t, { now: clock.now });
    for (let i = 0; i < 30; i++) {
      await f.post(leadBody());
      if (i % 4 === 0) clock.advance(1000); // several leads share an updated_at, so ties are ordered by id
    }
    clock.advance(1); // a list shows what changed before its own time (see listLeads)
    const first = await page(f, '');
    t.equal(first.data.length, 25, 'default page of 25');
    t.type(first.next_cursor, 'string');
    t.ok(first.next_cursor!.length <= 200, 'the cursor fits the 200 characters');
    const second = await page(f, `?cursor=${encodeURIComponent(first.next_cursor!)}`);
    t.equal(second.data.length, 5);
    t.equal(second.next_cursor, null, 'null on the last page');
    const all = [...first.data, ...second.data];
    const keys = all.map((l) => `${String(l.updated_at)}|${String(l.id)}`);
    t.same(keys, [...keys].sort(), 'ascending by (updated_at, id)');
    t.equal(new Set(all.map((l) => l.id)).size, 30, 'every lead once');
    const { LEAD_FIELDS } = await import('../../src/domain/leads/lead.js');
    t.ok(
      all.every((l) => JSON.stringify(Object.keys(l).sort()) === JSON.stringify([...LEAD_FIELDS].sort())),
      'listed leads have every Lead field and no other',
    );
    t.same(all[3], (await f.get(`/v1/leads/${String(all[3]!.id)}`)).body, 'the same lead as GET /v1/leads/{id}');

    t.equal((await walk(f, 1)).length, 30, 'limit 1 walks every lead');
    t.equal((await page(f, '?limit=100')).data.length, 30);
    const exact = await page(f, '?limit=30');
    t.equal(exact.next_cursor, null, 'a page that ends exactly at the last lead has no next cursor');
    const empty = await f.request(`/v1/leads?updated_since=${encodeURIComponent(clock.now().toISOString())}`, {
      key: f.live,
    });
    t.equal(await empty.text(), '{"data":[],"next_cursor":null}', 'past the last change: an empty page, exactly');

    for (const bad of [
      '?limit=0',
      '?limit=101',
      '?limit=abc',
      '?updated_since=yesterday',
      `?cursor=${'a'.repeat(201)}`,
      '?unknown=1',
    ]) {
      const res = await f.get(`/v1/leads${bad}`);
      t.equal(res.status, 400, bad);
      t.equal(res.body.error, 'validation_failed');
    }
  },
);

t.test('updated_since keeps leads updated at or after the instant', async (t) => {
  const clock = new TestClock();
  const f = await leadsFixture(t, { now: clock.now });
  const a = await f.post(leadBody());
  clock.advance(60_000);
  const b = await f.post(leadBody());
  const bAt = String((await f.get(`/v1/leads/${b.body.id}`)).body.updated_at);
  clock.advance(1); // a list shows what changed before its own time (see listLeads)
  t.same(
    (await page(f, `?updated_since=${encodeURIComponent(bAt)}`)).data.map((l) => l.id),
    [b.body.id],
    'inclusive of the instant',
  );
  clock.advance(60_000);
  await f.patch(String(a.body.id), { temperature: 'hot' });
  clock.advance(1);
  t.same(
    (await page(f, `?updated_since=${encodeURIComponent(bAt)}`)).data.map((l) => l.id),
    [b.body.id, a.body.id],
    'an update moves a lead to the end',
  );
  const offset = new Date(Date.parse(bAt) + 1).toISOString().replace('Z', '+00:00');
  t.same(
    (await page(f, `?updated_since=${encodeURIComponent(offset)}`)).data.map((l) => l.id),
    [a.body.id],
    'offsets are understood',
  );
});

t.test('tampered and foreign cursors answer 400', async (t) => {
  const f = await leadsFixture(t);
  for (let i = 0; i < 3; i++) await f.post(leadBody());
  const { next_cursor: cursor } = await page(f, '?limit=1');
  const flipped = cursor!.slice(0, 10) + (cursor![10] === 'A' ? 'B' : 'A') + cursor!.slice(11);
  for (const bad of [flipped, 'not-a-cursor', cursor!.slice(0, -2)]) {
    const res = await f.get(`/v1/leads?cursor=${encodeURIComponent(bad)}`);
    t.equal(res.status, 400);
    t.match(res.body, { error: 'validation_failed', fields: { cursor: /not a cursor/ } });
  }
  t.equal(
    (await f.get(`/v1/leads?cursor=${encodeURIComponent(cursor!)}`, f.test)).status,
    400,
    "the other mode's cursor is refused",
  );
  const other = await seedWorkspace(f);
  t.equal(
    (await f.get(`/v1/leads?cursor=${encodeURIComponent(cursor!)}`, other.live)).status,
    400,
    "another workspace's cursor is refused",
  );
  t.equal((await f.get(`/v1/leads?cursor=${encodeURIComponent(cursor!)}`)).status, 200, 'the cursor itself works');
  t.same((await page(f, '', other.live)).data, [], 'another workspace sees none of these leads');
});

/** The first server process whose current statement contains `text` and waits for a lock, polled up to 10 s. */
async function waitingOn(f: LeadsFixture, text: string): Promise<number | null> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const result = await f.pool.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position($1 IN query) > 0`,
      [text],
    );
    if (result.rows[0]) return result.rows[0].pid;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return null;
}

/**
 * A test-mode capture held open after it read its time and appended its lead: the test inserts, uncommitted, the
 * Idempotency-Key answer the capture is about to save, so the capture waits on that row until the test ends its own
 * transaction.
 */
async function heldCapture(
  f: LeadsFixture,
): Promise<{ release(): Promise<void>; answer: ReturnType<LeadsFixture['post']> }> {
  const holder = await f.pool.connect();
  await holder.query('BEGIN');
  await holder.query(
    `INSERT INTO api_idempotency (tenant_id, sandbox, operation, key, request_hash, status, body, created_at, expires_at)
     VALUES ($1, true, 'createLead:secret', 'held-capture', 'held', 201, '{}', now(), now() + interval '1 day')`,
    [f.workspace.id],
  );
  const answer = f.post(leadBody(), { key: f.test, headers: { 'idempotency-key': 'held-capture' } });
  if ((await waitingOn(f, 'api_idempotency')) === null) throw new Error('the capture never reached its answer’s row');
  return {
    answer,
    async release() {
      await holder.query('ROLLBACK');
      holder.release();
    },
  };
}

t.test('a list waits for the lead writes in flight of its workspace and mode, then shows them in order', async (t) => {
  const clock = new TestClock();
  const f = await leadsFixture(t, { now: clock.now });
  const held = await heldCapture(f);
  // A later write commits while the earlier one is still in flight: without the wait, a list now would serve the
  // later lead alone, and a client syncing from its updated_at would never see the earlier one.
  clock.advance(1);
  const later = await f.post(leadBody(), { key: f.test });
  t.equal(later.status, 201, 'writes do not wait for each other');
  clock.advance(1);
  let answered = false;
  const listing = page(f, '', f.test).then((p) => {
    answered = true;
    return p;
  });
  t.not(await waitingOn(f, 'pg_advisory_xact_lock_shared('), null, 'the list waits for the write in flight');
  t.notOk(answered, 'and has not answered');
  t.same((await page(f, '')).data, [], "the other mode's list does not wait");
  const other = await seedWorkspace(f);
  t.same((await page(f, '', other.test)).data, [], "another workspace's list does not wait");

  await held.release();
  const first = await held.answer;
  t.equal(first.status, 201, 'the held capture committed');
  t.same(
    (await listing).data.map((l) => l.id),
    [first.body.id, later.body.id],
    'once it ended, the list shows both writes, the earlier first',
  );
});

t.test('a lead write begun while a list waits neither waits for the list nor is served by it', async (t) => {
  const clock = new TestClock();
  const f = await leadsFixture(t, { now: clock.now });
  const held = await heldCapture(f);
  clock.advance(1);
  let served = false;
  const listing = page(f, '', f.test).then((p) => {
    served = true;
    return p;
  });
  if ((await waitingOn(f, 'pg_advisory_xact_lock_shared(')) === null) throw new Error('the list never waited');
  // A write that takes the gate after the list looked, with a clock that has not moved since the list read its time.
  const during = await f.post(leadBody(), { key: f.test });
  t.equal(during.status, 201, 'the write committed while the list still waited');
  t.notOk(served, 'the list was still waiting for the earlier write');
  await held.release();
  const first = await held.answer;
  t.same(
    (await listing).data.map((l) => l.id),
    [first.body.id],
    'the list served the write it waited for, not the one that took the gate after it looked',
  );
  const lead = (await f.get(`/v1/leads/${String(during.body.id)}`, f.test)).body;
  t.ok(
    Date.parse(String(lead.updated_at)) >= clock.now().getTime(),
    'the later write read a time no earlier than the list’s, so the next list serves it',
  );
  clock.advance(1);
  t.same(
    (await page(f, '', f.test)).data.map((l) => l.id),
    [first.body.id, during.body.id],
    'and the next list serves both in order',
  );
});

t.test('the gate at the SQL level: a list waits for the holders it found, and for no later one', async (t) => {
  const f = await leadsFixture(t);
  const { leadWriteGate, waitForLeadWrites } = await import('../../src/intake/sync-gate.js');
  const gate = leadWriteGate(f.workspace.id, false);
  const writer = async () => {
    const client = await f.pool.connect();
    await client.query('BEGIN');
    await client.query(gate.text, gate.values);
    return {
      async end() {
        await client.query('COMMIT');
        client.release();
      },
    };
  };
  const earlier = await writer();
  let listed = false;
  const list = waitForLeadWrites(f.pool, f.workspace.id, false).then(() => (listed = true));
  if ((await waitingOn(f, 'pg_advisory_xact_lock_shared(')) === null) throw new Error('the list never waited');
  const later = await writer();
  t.pass('a write takes the gate while a list waits: no write queues behind a list');
  await later.end();
  t.notOk(listed, 'the list still waits for the earlier write after the later one ended');
  const otherMode = leadWriteGate(f.workspace.id, true);
  const other = await f.pool.connect();
  await other.query('BEGIN');
  await other.query(otherMode.text, otherMode.values);
  await earlier.end();
  await list;
  t.ok(listed, 'and ends once the earlier write ended, whatever the other mode holds');
  await other.query('COMMIT');
  other.release();
});

t.test('a client syncing with updated_since misses no change while leads are updated during its walk', async (t) => {
  const f = await leadsFixture(t);
  const ids: string[] = [];
  for (let i = 0; i < 40; i++) ids.push(String((await f.post(leadBody())).body.id));
  // Each write waits up to 10 ms between reading its time and committing (a slow disk or a busy server), which
  // widens the window in which a write that read its clock earlier commits after a later one.
  await f.pool.query(
    `CREATE FUNCTION slow_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(random() * 0.01); RETURN NEW; END $$`,
  );
  await f.pool.query(
    'CREATE TRIGGER slow_write BEFORE INSERT OR UPDATE ON leads FOR EACH ROW EXECUTE FUNCTION slow_write()',
  );

  let writing = true;
  const writers = Array.from({ length: 8 }, async (_, w) => {
    for (let i = 0; i < 25; i++) {
      const id = ids[(w * 7 + i * 13) % ids.length]!;
      const patch =
        i % 3 === 0
          ? { note: `note ${w}.${i}` }
          : i % 3 === 1
            ? { custom_fields: { budget_lakhs: w * 100 + i } }
            : { temperature: (['hot', 'warm', 'cold'] as const)[i % 3] };
      const res = await f.patch(id, patch);
      if (res.status !== 200) throw new Error(`patch answered ${res.status}`);
    }
    // Also new leads during the walk.
    ids.push(String((await f.post(leadBody())).body.id));
  });
  const done = Promise.all(writers).then(() => {
    writing = false;
  });

  const view = new Map<string, Record<string, unknown>>();
  let since: string | undefined;
  let walks = 0;
  const syncOnce = async () => {
    const seen = await walk(f, 7, since);
    for (const lead of seen) view.set(String(lead.id), lead);
    if (seen.length > 0) since = String(seen[seen.length - 1]!.updated_at);
    walks += 1;
  };
  while (writing) await syncOnce();
  await done;
  await syncOnce();

  t.ok(walks > 1, `the client walked ${walks} times while writes went on`);
  const truth = await f.pool.query<{ id: string; body: Record<string, unknown> }>('SELECT id, body FROM leads');
  t.equal(view.size, truth.rows.length, 'the client saw every lead');
  const stale = truth.rows.filter((r) => canonical(view.get(r.id)) !== canonical(r.body));
  t.equal(stale.length, 0, 'and the latest version of each');
});

t.test(
  'a list shows only what changed before its own time: a write registering after the list looked can land no lower',
  async (t) => {
    const clock = new TestClock();
    const f = await leadsFixture(t, { now: clock.now });
    const created = await f.post(leadBody());
    t.same((await page(f, '')).data, [], 'a lead of this very millisecond is held back');
    clock.advance(1);
    t.same(
      (await page(f, '')).data.map((l) => l.id),
      [created.body.id],
      'and shown a millisecond later',
    );
  },
);

t.test('a list takes the gate in a statement of its own before the one that reads the rows', async (t) => {
  const f = await leadsFixture(t);
  const sent = recordSql(t);
  await page(f, '');
  const gate = sent.findIndex((s) => s.text.includes('pg_locks'));
  t.ok(gate >= 0, 'the list takes the gate');
  t.match(sent[gate + 1]?.text ?? '', /FROM lead_order/, 'and reads the rows in the next statement, a newer snapshot');
  t.equal(sent[gate + 1]?.connection, sent[gate]!.connection, 'on the same connection (the two leave in one write)');
  t.notOk(
    sent.some((s) => s.text === 'BEGIN' && s.connection === sent[gate]!.connection),
    'outside any transaction, so the gate is released at once',
  );
  t.ok(
    sent.every((s) => !s.values.some((v) => typeof v === 'string' && v.length > 2 && s.text.includes(v))),
    'no value is part of the SQL text',
  );
});
