import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { importExport } from '../../src/commands/export/import-log.js';
import { ImportRefusedError } from '../../src/commands/export/line-checker.js';
import { projections } from '../../src/projections/index.js';
import { checkProperty } from '../support/properties.js';
import { faultInjector } from '../support/fault-injection.js';
import { exportLines } from '../../src/commands/export/export-log.js';
import { appFixture } from '../applications/support.js';
import { eventRows, makeBusy, readModelRows } from '../support/busy-workspace.js';
import { runCli } from '../support/cli.js';
import { freshDatabase } from '../support/db.js';

// Export and import through the real command-line tool: a busy workspace exported, imported into a fresh database,
// its read models and log compared row by row with the source, verify passing on the target with the same head.

interface Summary {
  workspace: string;
  events: number;
  next: string;
  head: string;
  anchor: string;
}

function tempDir(t: Test): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vcrm-export-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function* each(lines: string[]): AsyncGenerator<string> {
  yield* lines;
}

async function cliJson<T>(t: Test, url: string, args: string[]): Promise<T> {
  const result = await runCli(url, ['--json', ...args]);
  t.equal(result.code, 0, `visa-crm ${args.join(' ')}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

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
  t.equal(secrets.length, 2);
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
  t.same(await readModelRows(target.pool, f.ws.workspace.id), await readModelRows(f.app.pool, f.ws.workspace.id));

  const alone = await runCli((await freshDatabase(t)).url, ['import', path.join(dir, '2.ndjson')]);
  t.equal(alone.code, 2, 'a continuation alone is refused');
  t.match(alone.stderr, /line 1: this export continues from/);
  const bad = await runCli(source, ['export', slug, '--after', 'yesterday']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--after takes/);
  t.equal((await runCli(source, ['export', 'no-such-workspace'])).code, 2, 'an unknown workspace is refused');
});

t.test('a tampered export is refused, naming the line, and leaves the target untouched', async (t) => {
  const f = await appFixture(t);
  for (let i = 0; i < 4; i++) await f.convert(await f.lead());
  const dir = tempDir(t);
  const file = path.join(dir, 'export.ndjson');
  await cliJson<Summary>(t, f.app.services.config.databaseUrl!, ['export', f.ws.workspace.slug, '--out', file]);
  const lines = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
  const target = await freshDatabase(t);
  const refusal = async (tampered: string[]): Promise<ImportRefusedError | null> => {
    try {
      await importExport(target.pool, projections, [{ name: 'x', lines: each(tampered) }]);
      return null;
    } catch (error) {
      if (error instanceof ImportRefusedError) return error;
      throw error;
    }
  };
  const eventCount = lines.length - 2;
  const tamper = fc.oneof(
    fc.record({ kind: fc.constant('change' as const), at: fc.integer({ min: 1, max: eventCount }) }),
    fc.record({ kind: fc.constant('delete' as const), at: fc.integer({ min: 1, max: eventCount }) }),
    fc.record({ kind: fc.constant('swap' as const), at: fc.integer({ min: 1, max: eventCount - 1 }) }),
    fc.record({ kind: fc.constant('cut' as const), at: fc.integer({ min: 1, max: eventCount + 1 }) }),
  );
  await checkProperty(
    t,
    'every tampered export is refused at the right line',
    fc.asyncProperty(tamper, async ({ kind, at }) => {
      const copy = [...lines];
      let expectedLine: number;
      if (kind === 'change') {
        const event = JSON.parse(copy[at]!) as { data: Record<string, unknown> };
        event.data = { ...event.data, tampered: true };
        copy[at] = JSON.stringify(event);
        expectedLine = at + 1;
      } else if (kind === 'delete') {
        copy.splice(at, 1);
        // The next line of the same stream (a revision gap) or, for a stream's last event, the trailer's head.
        expectedLine = -1;
      } else if (kind === 'swap') {
        [copy[at], copy[at + 1]] = [copy[at + 1]!, copy[at]!];
        // One stream: a revision ahead at the first of the two; two streams: a position behind at the second.
        expectedLine = -2;
      } else {
        copy.splice(at);
        expectedLine = at;
      }
      const error = await refusal(copy);
      if (error === null) return false;
      const nothingLeft = await target.pool.query(
        'SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM workspaces) AS n',
      );
      if (Number(nothingLeft.rows[0].n) !== 0) return false;
      if (expectedLine === -2) return error.line === at + 1 || error.line === at + 2;
      return expectedLine === -1 ? error.line > at : error.line === expectedLine;
    }),
    40,
  );

  const changed = [...lines];
  const event = JSON.parse(lines[3]!) as { data: Record<string, unknown> };
  event.data = { ...event.data, extra: 1 };
  changed[3] = JSON.stringify(event);
  const bad = path.join(dir, 'tampered.ndjson');
  fs.writeFileSync(bad, `${changed.join('\n')}\n`);
  const cli = await runCli(target.url, ['import', bad]);
  t.equal(cli.code, 2, 'the CLI refuses it');
  t.match(cli.stderr, /line 4: event [0-9a-f-]{36}: its hash does not follow/);
});

t.test('a fault at any statement of an import rolls all of it back', async (t) => {
  const f = await appFixture(t);
  for (let i = 0; i < 3; i++) await f.convert(await f.lead());
  const lines: string[] = [];
  for await (const chunk of exportLines(f.app.pool, f.ws.workspace, null, new Date()))
    lines.push(...chunk.trimEnd().split('\n'));
  const faults = faultInjector(t);
  const counting = await freshDatabase(t);
  const statements = faults.count();
  await importExport(counting.pool, projections, [{ name: 'x', lines: each(lines) }]);
  const total = statements();
  t.ok(total >= 8, `${total} statements in an import`);

  const target = await freshDatabase(t);
  const left = async () =>
    (
      await target.pool.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM workspaces) + (SELECT count(*) FROM leads)
              + (SELECT count(*) FROM applications) + (SELECT count(*) FROM application_numbers) AS n`,
      )
    ).rows[0]!.n;
  await checkProperty(
    t,
    'a failed statement leaves nothing',
    fc.asyncProperty(fc.integer({ min: 1, max: total }), async (position) => {
      faults.arm(position);
      const failed = await importExport(target.pool, projections, [{ name: 'x', lines: each(lines) }]).then(
        () => false,
        () => true,
      );
      return failed && faults.fired() !== undefined && Number(await left()) === 0;
    }),
    15,
  );
  await importExport(target.pool, projections, [{ name: 'x', lines: each(lines) }]);
  t.same(await readModelRows(target.pool, f.ws.workspace.id), await readModelRows(f.app.pool, f.ws.workspace.id));
});
