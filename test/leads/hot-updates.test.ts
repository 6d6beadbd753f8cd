import t from 'tap';
import type pg from 'pg';
import { leadBody, leadsFixture } from './helpers.js';

/** The table's write counters as the statistics hold them (pg_stat_user_tables). */
async function writes(pool: pg.Pool, table: string): Promise<{ ins: number; upd: number; hot: number }> {
  const client = await pool.connect();
  try {
    // This backend's own counters first, then a fresh read of everyone's (not the snapshot of an earlier read).
    await client.query('SELECT pg_stat_force_next_flush()');
    await client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await client.query<{ ins: string; upd: string; hot: string }>(
      'SELECT n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relname = $1',
      [table],
    );
    const r = rows[0]!;
    return { ins: Number(r.ins), upd: Number(r.upd), hot: Number(r.hot) };
  } finally {
    client.release();
  }
}

/**
 * Waits until the app's connections have reported at least `updates` updates of `table` (a backend sends its counters
 * once idle, at most once a second), polling a bounded number of times.
 */
async function reportedUpdates(pool: pg.Pool, table: string, updates: number) {
  for (let i = 0; i < 60; i++) {
    const now = await writes(pool, table);
    if (now.upd >= updates) return now;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return writes(pool, table);
}

/*
 * One lead, so its page has room for every new version without pruning: whether an update is HOT then depends only
 * on whether it changes an indexed column (pruning an old version needs every snapshot that could see it gone, which
 * the app's own subscribers decide, not this test).
 */
t.test("a lead's changes of stage, owner and follow-up are HOT updates of leads; lead_order follows", async (t) => {
  const f = await leadsFixture(t);
  const created = await f.post(leadBody({ full_name: 'Hot Person' }));
  t.equal(created.status, 201);
  const id = String(created.body.id);
  const before = await writes(f.pool, 'leads');
  const orderBefore = await writes(f.pool, 'lead_order');
  const patches = [
    { stage_key: 'contacted' },
    { owner_email: 'asha@northstar.example' },
    { next_follow_up_at: '2030-01-02T09:30:00.000Z' },
    { stage_key: 'qualified', temperature: 'hot' },
  ];
  for (const patch of patches)
    t.equal((await f.patch(id, patch)).status, 200, `PATCH ${Object.keys(patch).join(', ')}`);
  const changes = patches.length;
  const after = await reportedUpdates(f.pool, 'leads', before.upd + changes);
  t.equal(after.upd - before.upd, changes, 'each change updates the row once');
  t.equal(after.hot - before.hot, changes, 'and every one of those updates is HOT');
  const order = await reportedUpdates(f.pool, 'lead_order', orderBefore.upd + changes);
  t.equal(order.upd - orderBefore.upd, changes, "lead_order's row follows each change");

  // The narrow row says what the body says, and the sync order follows it.
  const { rows } = await f.pool.query<{ same: boolean }>(
    `SELECT (o.updated_at = l.updated_at AND o.stage_key = l.body->'stage'->>'key' AND o.owner_id = l.owner_id
             AND o.follow_up_at = l.body->>'next_follow_up_at' AND o.stage_key = 'qualified') AS same
       FROM leads l JOIN lead_order o ON o.id = l.id WHERE l.id = $1`,
    [id],
  );
  t.same(rows, [{ same: true }]);
  const other = await f.post(leadBody({ full_name: 'Later Person' }));
  await f.patch(id, { temperature: 'cold' });
  const page = await f.get('/v1/leads?limit=100');
  t.equal(page.status, 200);
  t.same(
    (page.body.data as { id: string }[]).map((l) => l.id),
    [String(other.body.id), id],
    'the lead changed last comes last',
  );
});
