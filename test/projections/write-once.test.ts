import t from 'tap';
import type pg from 'pg';
import { projections } from '../../src/projections/index.js';
import { rebuildReadModels } from '../../src/projections/rebuild.js';
import { appFixture } from '../applications/support.js';
import { recordSql, type SentStatement } from '../support/sql-recorder.js';

// A command that appends several events to a stream writes its read-model row once, with the folded result; a
// rebuild writes each row once (inserted, never updated, when its events fall within one fold window); and the
// updates that touch no indexed column are HOT.

const writesTo = (sent: readonly SentStatement[], table: string) =>
  sent.filter((s) => new RegExp(`^\\s*(INSERT INTO|UPDATE) ${table}\\b`).test(s.text));

/** Rows a fold's statement writes: one with plain parameters, else as many as its arrays hold. */
const rowsWritten = (s: SentStatement) => (Array.isArray(s.values[0]) ? (s.values[0] as unknown[]).length : 1);

/** The table's update counters, once the server has counted at least `updates` updates since `before`. */
async function updateCounts(
  pool: pg.Pool,
  table: string,
  before?: { upd: number; hot: number },
  updates = 0,
): Promise<{ upd: number; hot: number }> {
  // Counters reach pg_stat_user_tables when the writing backend flushes them (within a second of going idle).
  for (let attempt = 0; ; attempt++) {
    const { rows } = await pool.query<{ upd: number; hot: number }>(
      `SELECT n_tup_upd::int AS upd, n_tup_hot_upd::int AS hot FROM pg_stat_user_tables WHERE relname = $1`,
      [table],
    );
    const now = rows[0]!;
    if (!before || now.upd - before.upd >= updates || attempt === 100) return now;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

t.test('a command with several events writes each row once', async (t) => {
  const f = await appFixture(t);
  const sent = recordSql(t);
  const leadId = await f.lead();
  t.equal(writesTo(sent, 'leads').length, 1, 'a capture: one write of the lead row');

  sent.length = 0;
  const patch = await f.app.request(`/v1/leads/${leadId}`, {
    method: 'PATCH',
    key: f.ws.live,
    json: { stage_key: 'contacted', temperature: 'hot', note: 'Called back' },
  });
  t.equal(patch.status, 200);
  const events = (await f.app.services.store.readStream(`lead-${leadId}`)).map((e) => e.type);
  t.same(events, ['lead.created', 'lead.updated', 'lead.note_added'], 'the patch appended two events');
  const writes = writesTo(sent, 'leads');
  t.equal(writes.length, 1, 'one statement writes the lead row');
  t.match(writes[0]!.text, /^\s*UPDATE leads/);
  t.equal(rowsWritten(writes[0]!), 1, 'for one row');

  // The stored text is the answer's: one serialiser.
  const { rows } = await f.app.pool.query<{ body: string }>('SELECT body::text AS body FROM leads WHERE id = $1', [
    leadId,
  ]);
  t.equal(rows[0]!.body, await patch.text(), 'the PATCH answers the text the row holds');
  const read = await f.app.request(`/v1/leads/${leadId}`, { key: f.ws.live });
  t.equal(await read.text(), rows[0]!.body, 'and GET answers it as it is');

  sent.length = 0;
  const application = await f.convert(leadId);
  t.equal(writesTo(sent, 'leads').length, 1, 'a conversion: one write of the lead row');
  const appWrites = writesTo(sent, 'applications');
  t.equal(appWrites.length, 1, 'and one of the case row, opened and moved to its first stage');
  t.match(appWrites[0]!.text, /^\s*INSERT INTO applications/);
  t.equal((await f.stream(application.id)).length, 2, 'from the two events of the case stream');
});

t.test('a rebuild writes each row once; updates that touch no indexed column are HOT', async (t) => {
  const f = await appFixture(t);
  const leads: string[] = [];
  for (let i = 0; i < 4; i++) leads.push(await f.lead());
  for (const id of leads)
    await f.app.request(`/v1/leads/${id}`, {
      method: 'PATCH',
      key: f.ws.live,
      json: { stage_key: 'contacted', note: 'Called back' },
    });
  const application = await f.convert(leads[0]!);

  const sent = recordSql(t);
  await rebuildReadModels(f.app.pool, projections, f.app.services.personalData, { batchSize: 3 });
  const leadWrites = writesTo(sent, 'leads');
  t.ok(
    leadWrites.every((s) => /^\s*INSERT INTO leads/.test(s.text)),
    'the rebuild never updates a lead row',
  );
  t.equal(
    leadWrites.reduce((n, s) => n + rowsWritten(s), 0),
    leads.length,
    'it inserts each lead once',
  );
  t.equal(leadWrites.length, 1, 'in one statement (every lead within one window)');
  t.ok(
    writesTo(sent, 'applications').every((s) => /^\s*INSERT INTO applications/.test(s.text)),
    'and never updates a case row',
  );

  // applications has no index on a column a case's progress changes (state, status, updated_at): HOT.
  const before = await updateCounts(f.app.pool, 'applications');
  for (const path of ['/modules/sop/select', '/outcome']) {
    const json = path === '/outcome' ? { outcome: 'granted' } : undefined;
    const response = await f.admin(`/applications/${application.id}${path}`, {
      method: 'POST',
      ...(json ? { json } : {}),
    });
    t.ok(response.status < 300, `POST ${path}: ${response.status}`);
  }
  const after = await updateCounts(f.app.pool, 'applications', before, 2);
  t.ok(after.upd - before.upd >= 2, `the case row was updated (${after.upd - before.upd} updates)`);
  t.equal(after.hot - before.hot, after.upd - before.upd, 'every update of a case row was HOT');
});
