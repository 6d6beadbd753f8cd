import { randomUUID } from 'node:crypto';
import t from 'tap';
import { recordSql, transactions } from '../support/sql-recorder.js';
import { TestClock, seedWorkspace } from '../support/app.js';
import { leadBody, leadsFixture, type LeadsFixture } from './helpers.js';
import { intentPrefix, settleTime, writeIntent } from '../../src/leads/write-intents.js';

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

/** A session of its own that opens a transaction registered as a lead write from `at`, as a writer in flight would. */
async function inFlightWrite(
  f: LeadsFixture,
  at: Date,
  o: { sandbox?: boolean; tenantId?: string } = {},
): Promise<{ end(how: 'COMMIT' | 'ROLLBACK'): Promise<void> }> {
  const client = await f.pool.connect();
  const { registration } = writeIntent(o.tenantId ?? f.workspace.id, o.sandbox ?? false, () => at);
  await client.query('BEGIN');
  await client.query(registration.text, registration.values);
  return {
    async end(how) {
      await client.query(how);
      client.release();
    },
  };
}

/** The session names registered for this workspace's live leads, as any other connection sees them. */
async function registered(f: LeadsFixture): Promise<string[]> {
  const result = await f.pool.query<{ name: string }>(
    'SELECT application_name AS name FROM pg_stat_activity WHERE starts_with(application_name, $1)',
    [intentPrefix(f.workspace.id, false)],
  );
  return result.rows.map((r) => r.name);
}

t.test('a write in flight holds back the rows it could land behind', async (t) => {
  const f = await leadsFixture(t);
  await f.post(leadBody());
  const inFlightAt = new Date();
  await new Promise((r) => setTimeout(r, 5));
  const later = await f.post(leadBody());

  // As a write that registered (and read its clock) before `later` but has not committed yet.
  const writer = await inFlightWrite(f, inFlightAt);
  const held = await page(f, '');
  t.equal(held.data.length, 1, 'the lead written after the in-flight write started is held back');
  t.equal((await page(f, '', f.test)).data.length, 0, 'the sandbox is not affected either way');
  const younger = await inFlightWrite(f, new Date());
  t.equal((await page(f, '')).data.length, 1, 'with two writes in flight, the older one sets the limit');
  await writer.end('COMMIT');
  t.same((await page(f, '')).data.map((l) => l.id).includes(later.body.id), true, 'released once it commits');
  await younger.end('ROLLBACK');
  t.same(await registered(f), [], 'a committed or rolled-back write is no longer registered');

  const others = [
    await inFlightWrite(f, inFlightAt, { sandbox: true }),
    await inFlightWrite(f, inFlightAt, { tenantId: randomUUID() }),
  ];
  t.equal((await page(f, '')).data.length, 2, "the other mode's and other workspaces' writes hold nothing back");
  for (const other of others) await other.end('ROLLBACK');

  const stuck = await inFlightWrite(f, new Date(Date.now() - 10 * 60_000));
  t.equal((await page(f, '')).data.length, 2, 'a write stuck for more than two minutes stops holding rows back');
  await stuck.end('ROLLBACK');

  const client = await f.pool.connect();
  await client.query('BEGIN');
  await client.query("SELECT set_config('application_name', $1, true)", [`${intentPrefix(f.workspace.id, false)}x'1`]);
  t.equal(
    (await page(f, '')).data.length,
    2,
    'a session name that only starts like a registration is ignored, not an error',
  );
  await client.query('ROLLBACK');
  client.release();
});

t.test(
  'a lead write registers before its work, reads its time after it, and is unregistered when it ends',
  async (t) => {
    const f = await leadsFixture(t);
    const context = () => ({
      tenantId: f.workspace.id,
      sandbox: false,
      metadata: { actor: { type: 'system' as const, name: 'test' }, correlation_id: randomUUID() },
      now: new Date(),
    });
    const clock = () => new Date();

    const intent = writeIntent(f.workspace.id, false, clock);
    await f.services.store.transact(
      context(),
      [],
      async (tx) => {
        t.same(
          await registered(f),
          [`${intentPrefix(f.workspace.id, false)}${intent.at.getTime()}`],
          'registered before the work starts, so no time is read before the write is registered',
        );
        await tx.sql.query('SELECT 1');
        t.same(
          await registered(f),
          [`${intentPrefix(f.workspace.id, false)}${intent.at.getTime()}`],
          'after the first round trip other connections see the registration, while the transaction is still open',
        );
        const at = settleTime(tx, intent, () => new Date(intent.at.getTime() - 60_000));
        t.equal(at.getTime(), intent.at.getTime(), 'the time is never before the registration');
        t.equal(tx.context.now.getTime(), at.getTime(), "and is the time the transaction's events carry");
      },
      { opening: intent.registration },
    );
    t.same(await registered(f), [], 'gone when the write committed');

    await t.rejects(
      f.services.store.transact(
        context(),
        [],
        async (tx) => {
          await tx.sql.query('SELECT 1');
          t.equal((await registered(f)).length, 1, 'registered');
          throw new Error('boom');
        },
        { opening: writeIntent(f.workspace.id, false, clock).registration },
      ),
      /boom/,
    );
    t.same(await registered(f), [], 'a failed write is unregistered too');

    // Real captures and updates leave nothing registered behind them.
    const created = await f.post(leadBody());
    t.equal((await f.patch(String(created.body.id), { note: 'called back' })).status, 200);
    t.same(await registered(f), [], 'captures and updates leave no registration behind');
  },
);

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

t.test('a list reads the writes in flight in a statement before the one that reads the rows', async (t) => {
  const f = await leadsFixture(t);
  const sent = recordSql(t);
  await page(f, '');
  const list = transactions(sent).find((tx) => tx.some((s) => s.text.includes('pg_stat_get_activity')));
  t.ok(list, 'the list runs in a transaction');
  t.same(
    list!.map((s) =>
      s.text.includes('pg_stat_get_activity') ? 'registrations' : /FROM leads/.test(s.text) ? 'rows' : s.text,
    ),
    ['BEGIN', 'registrations', 'rows', 'COMMIT'],
    'the registrations are read by a statement before the one that reads the rows, whose snapshot is newer',
  );
  t.ok(
    list!.every((s) => !s.values.some((v) => typeof v === 'string' && s.text.includes(v))),
    'no value is part of the SQL text',
  );
});
