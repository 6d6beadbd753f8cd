import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { PostgresEventStore } from '../../src/events/postgres-event-store.js';
import { demoDefinition } from '../support/app.js';
import { runCli, runCliJson } from '../support/cli.js';
import { freshDatabase } from '../support/db.js';
import { context } from '../support/event-store-scenarios.js';

interface Verified {
  workspace: string;
  events: number;
  broken: { eventId: string; reason: string } | null;
  anchor: string;
}

t.test('visa-crm audit verify reports intact chains, the first broken link, and a changed head', async (t) => {
  const { pool, url } = await freshDatabase(t);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vcrm-audit-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const def = demoDefinition();
  const file = path.join(dir, 'workspace.json');
  fs.writeFileSync(file, JSON.stringify(def));
  const workspace = await runCliJson<{ id: `${string}-${string}-${string}-${string}-${string}` }>(url, [
    'workspace',
    'apply',
    file,
  ]);

  const store = new PostgresEventStore(pool, []);
  for (const n of [1, 2, 3])
    await store.transact(context(workspace.id), [], (tx) =>
      tx.append(`audit-${n}`, 'no_stream', [
        { type: 'test.opened', data: { n } },
        { type: 'test.noted', data: { n, note: 'two' } },
      ]),
    );

  const [clean] = await runCliJson<Verified[]>(url, ['audit', 'verify', def.slug]);
  t.match(clean, { workspace: def.slug, broken: null });
  t.ok(clean!.events >= 6, 'every event was read');
  const all = await runCliJson<Verified[]>(url, ['audit', 'verify']);
  t.ok(
    all.some((r) => r.workspace === def.slug && r.broken === null),
    'without a workspace, each is verified',
  );
  const human = await runCli(url, ['audit', 'verify', def.slug]);
  t.equal(human.code, 0);
  t.match(human.stdout, /every chain verifies\n\s+head [0-9a-f]{64}@\d+\/\d+/);

  // The last event of a stream removed: the chains still verify, the kept anchor does not.
  await pool.query(`DELETE FROM events WHERE stream_id = 'audit-3' AND revision = 1`);
  t.equal((await runCli(url, ['audit', 'verify', def.slug])).code, 0, 'a cut tail alone leaves the chains intact');
  const anchored = await runCli(url, ['--json', 'audit', 'verify', def.slug, '--anchor', clean!.anchor]);
  t.equal(anchored.code, 3, 'against the kept anchor it exits 3');
  t.match(JSON.parse(anchored.stdout), [{ broken: { reason: 'anchor_mismatch' } }]);

  const changed = (
    await pool.query<{ id: string }>(`SELECT id FROM events WHERE stream_id = 'audit-2' AND revision = 0`)
  ).rows[0]!.id;
  await pool.query(`UPDATE events SET data = '{"n": 9}' WHERE id = $1`, [changed]);
  const broken = await runCli(url, ['audit', 'verify', def.slug]);
  t.equal(broken.code, 3, 'a broken chain exits 3');
  t.match(broken.stdout, new RegExp(`BROKEN at event ${changed}, stream audit-2 revision 0.*hash_mismatch`));

  const bad = await runCli(url, ['audit', 'verify', def.slug, '--anchor', 'nonsense']);
  t.equal(bad.code, 2, 'a malformed anchor is refused');
});
