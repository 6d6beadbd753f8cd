import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import t from 'tap';
import { applyDefinition } from '../../src/workspaces/repository.js';
import { appFixture } from '../applications/support.js';
import { demoDefinition } from '../support/app.js';
import { eventRows, makeBusy, readModelRows } from '../support/busy-workspace.js';
import { runCli } from '../support/cli.js';
import { freshDatabase } from '../support/db.js';
import { cliJson, tempDir, type ExportSummary as Summary } from '../support/export.js';

// Export and import through the real command-line tool: a busy workspace exported, imported into a fresh database,
// its read models and log compared row by row with the source, verify passing on the target with the same head.

// Each CLI run starts a Node process (seconds each on a loaded two-core machine): more than tap's default 180 s per file.
t.setTimeout(420_000);

t.test('a busy workspace exported and imported into a fresh database has identical read models', async (t) => {
  const f = await appFixture(t);
  const secrets = await makeBusy(f);
  const source = f.app.services.config.databaseUrl!;
  const tenantId = f.ws.workspace.id;
  const slug = f.ws.workspace.slug;
  const dir = tempDir(t);
  const file = path.join(dir, 'export.ndjson');

  const exported = await cliJson<Summary>(t, source, ['export', slug, '--out', file]);
  const lines = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
  t.equal(exported.events, lines.length - 2, 'one line per event between the header and the trailer');
  t.ok(exported.events > 40, `${exported.events} events exported`);
  const header = JSON.parse(lines[0]!) as { format: string; version: number; workspace: { id: string } };
  t.match(header, { format: 'visa-crm-export', version: 1, workspace: { id: tenantId, slug }, after: null });
  const { events, next, head, anchor } = exported;
  t.same(JSON.parse(lines.at(-1)!), { trailer: true, events, next, head, anchor }, 'the trailer is what was printed');
  const [verified] = await cliJson<{ anchor: string }[]>(t, source, ['audit', 'verify', slug]);
  t.equal(exported.anchor, verified!.anchor, 'the head printed is the head verify prints');
  const text = fs.readFileSync(file, 'utf8');
  for (const key of [f.ws.live, f.ws.test, f.ws.publicLive]) t.notOk(text.includes(key), 'no API key is in the export');
  t.equal(secrets.length, 3, 'two endpoints, one rotated, one deleted');
  for (const secret of secrets) t.notOk(text.includes(secret), 'no webhook secret in plain text');

  const target = await freshDatabase(t);
  const imported = await cliJson<{ events: number; anchor: string; workspace: { id: string } }>(t, target.url, [
    'import',
    file,
  ]);
  t.match(imported, { events: exported.events, anchor: exported.anchor, workspace: { id: tenantId } });
  t.same(await eventRows(target.pool, tenantId), await eventRows(f.app.pool, tenantId), 'the same log, in order');
  const expected = await readModelRows(f.app.pool, tenantId);
  const actual = await readModelRows(target.pool, tenantId);
  for (const table of Object.keys(expected)) {
    t.ok(table === 'quota' || expected[table]!.length > 0 || table === 'invoice_numbers', `${table} has rows`);
    t.same(actual[table], expected[table], `${table}: every row identical`);
  }
  const [targetVerified] = await cliJson<{ anchor: string; broken: unknown }[]>(t, target.url, [
    'audit',
    'verify',
    slug,
  ]);
  t.equal(targetVerified!.broken, null, 'audit verify passes on the target');
  const sourceHead = verified!.anchor.split('@')[0];
  t.equal(targetVerified!.anchor.split('@')[0], sourceHead, 'with the same head');
  const endpoints = await target.pool.query(
    `SELECT count(*)::integer AS n FROM webhook_endpoints ep JOIN events ev
        ON ev.tenant_id = ep.tenant_id AND (ev.tx_id, ev.position) > (ep.created_tx_id, ep.created_position)`,
  );
  t.equal(endpoints.rows[0].n, 0, 'no imported event lies after an endpoint: nothing is delivered again');

  const again = await runCli(target.url, ['import', file]);
  t.equal(again.code, 2, 'a workspace that has events is refused');
  t.match(again.stderr, /already has events in this database/);

  // Compressed: import tells gzip by its magic bytes, whatever the file is called.
  const gz = path.join(dir, 'export-gz.ndjson');
  const zipped = await cliJson<Summary>(t, source, ['export', slug, '--gzip', '--out', gz]);
  t.equal(zlib.gunzipSync(fs.readFileSync(gz)).toString('utf8').split('\n').length, lines.length + 1);
  t.equal(zipped.anchor, exported.anchor);
  const third = await freshDatabase(t);
  const fromGzip = await cliJson<{ events: number; anchor: string }>(t, third.url, ['import', gz]);
  t.match(fromGzip, { events: exported.events, anchor: exported.anchor });
  t.same(await readModelRows(third.pool, tenantId), expected, 'the same read models from the gzip export');
});

t.test('export on stdout, resumed with --after, imported as a chain of files', async (t) => {
  const f = await appFixture(t);
  const slug = f.ws.workspace.slug;
  const source = f.app.services.config.databaseUrl!;
  const dir = tempDir(t);
  await f.lead();
  await f.lead();
  const first = await runCli(source, ['--json', 'export', slug]);
  t.equal(first.code, 0, first.stderr);
  const summary = JSON.parse(first.stderr.trim().split('\n').at(-1)!) as Summary;
  t.equal(first.stdout.trimEnd().split('\n').length, summary.events + 2, 'the export alone on stdout');
  fs.writeFileSync(path.join(dir, '1.ndjson'), first.stdout);
  await f.convert(await f.lead());
  // The workspace renamed between the two exports: the continuation's header carries the new name.
  await applyDefinition(f.app.pool, demoDefinition({ slug, name: 'Northstar Renamed' }), f.app.services.secretBox);
  const second = await cliJson<Summary>(t, source, [
    'export',
    slug,
    '--after',
    summary.next,
    '--out',
    path.join(dir, '2.ndjson'),
  ]);
  t.ok(second.events >= 3, 'the second export holds what came after the first');
  const nothing = await cliJson<Summary>(t, source, [
    'export',
    slug,
    '--after',
    second.next,
    '--out',
    path.join(dir, '3.ndjson'),
  ]);
  t.match(nothing, { events: 0, next: second.next, anchor: second.anchor }, 'nothing new: the same place and head');
  const target = await freshDatabase(t);
  const imported = await cliJson<{ events: number; anchor: string }>(t, target.url, [
    'import',
    ...['1', '2', '3'].map((n) => path.join(dir, `${n}.ndjson`)),
  ]);
  t.match(imported, { events: summary.events + second.events, anchor: second.anchor });
  const rows = await readModelRows(target.pool, f.ws.workspace.id);
  t.same(rows, await readModelRows(f.app.pool, f.ws.workspace.id));
  t.match(rows.workspaces, [{ name: 'Northstar Renamed' }], 'the workspace as the last export saw it');

  const alone = await runCli((await freshDatabase(t)).url, ['import', path.join(dir, '2.ndjson')]);
  t.equal(alone.code, 2, 'a continuation alone is refused');
  t.match(alone.stderr, /line 1: this export continues from/);
  const bad = await runCli(source, ['export', slug, '--after', 'yesterday']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--after takes/);
  t.equal((await runCli(source, ['export', 'no-such-workspace'])).code, 2, 'an unknown workspace is refused');
});
