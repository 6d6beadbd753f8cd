import { randomBytes } from 'node:crypto';
import t from 'tap';
import { exportLines } from '../../src/commands/export/export-log.js';
import { recordErasure } from '../../src/commands/export/erasure-ledger.js';
import { importExport } from '../../src/commands/export/import-log.js';
import { parsePositionToken } from '../../src/commands/export/position-token.js';
import { projections } from '../../src/projections/index.js';
import type { ExportTrailer } from '../../src/schemas/export.js';
import { appFixture, type AppFixture } from '../applications/support.js';
import { freshDatabase } from '../support/db.js';
import { each } from '../support/export.js';
import { searchEverywhere } from '../support/search-everywhere.js';

// A restore does not bring an erased person back. An export written before an erasure carries the
// person's key seeds; imported where the erasure is known (a later export's trailer, or this database's ledger), the
// person stays erased: no key of theirs is live and no table holds their name, email or what staff wrote about them.

async function exportText(f: AppFixture, after: string | null = null): Promise<string[]> {
  let text = '';
  const from = after === null ? null : parsePositionToken(after);
  for await (const chunk of exportLines(f.app.pool, f.ws.workspace, from, new Date())) text += chunk;
  return text.trimEnd().split('\n');
}

const trailerOf = (lines: string[]) => JSON.parse(lines.at(-1)!) as ExportTrailer;

async function liveKeysOf(pool: import('pg').Pool, person: string): Promise<number> {
  const result = await pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM personal_data_keys WHERE person_id = $1 AND wrapped_key IS NOT NULL',
    [person],
  );
  return result.rows[0]!.n;
}

t.test('an export older than an erasure, restored, keeps the person erased', async (t) => {
  const f = await appFixture(t);
  const tag = randomBytes(5).toString('hex');
  const person = { full_name: `Asha Rao ${tag}`, email: `asha-${tag}@example.org`, phone: '+919812345678' };
  const created = await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { ...person, consent: true },
  });
  t.equal(created.status, 201);
  const leadId = ((await created.json()) as { id: string }).id;
  const title = `Call Asha Rao ${tag}`;
  const due = new Date(Date.now() + 86_400_000).toISOString();
  t.equal((await f.admin('/tasks', { method: 'POST', json: { lead_id: leadId, title, due_at: due } })).status, 201);
  await f.convert(leadId);
  const needles = [person.full_name, person.email, title];

  const before = await exportText(f); // the backup, older than the erasure
  t.equal((await f.admin(`/leads/${leadId}/erase`, { method: 'POST' })).status, 200);
  const later = await exportText(f, trailerOf(before).next); // a later export, continuing it
  const whole = await exportText(f);
  for (const lines of [later, whole])
    t.match(trailerOf(lines).erasures, [{ person: leadId, erased_at: String }], 'exports carry the erasure ledger');
  t.same(await searchEverywhere(f.app.pool, needles), [], 'the source holds nothing of the person');

  const restore = async (files: string[][], known = false) => {
    const target = await freshDatabase(t);
    if (known) await recordErasure(target.pool, f.ws.workspace.id, leadId, new Date());
    await importExport(
      target.pool,
      projections,
      files.map((lines, i) => ({ name: `part-${i}`, lines: each(lines) })),
      f.app.services.personalData,
      { webhookSecrets: f.app.services.secretBox.webhookSecrets },
    );
    return target.pool;
  };

  const withLater = await restore([before, later]);
  t.equal(await liveKeysOf(withLater, leadId), 0, 'backup and later export: no key of the person is live');
  t.same(await searchEverywhere(withLater, needles), [], 'backup and later export: nothing of the person anywhere');

  const known = await restore([before], true);
  t.equal(await liveKeysOf(known, leadId), 0, 'backup into a database that knows the erasure: no live key');
  t.same(await searchEverywhere(known, needles), [], 'backup into a database that knows the erasure: nothing');
  const ledger = await known.query('SELECT person_id FROM erasure_ledger');
  t.same(ledger.rows, [{ person_id: leadId }], 'the ledger holds the person id alone');

  const unknowing = await restore([before]);
  t.ok(
    (await searchEverywhere(unknowing, needles)).length > 0,
    'where nothing knows of it, the backup alone restores the person (README: what operators must do)',
  );
});
