import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { exportLines } from '../../src/commands/export/export-log.js';
import { importExport } from '../../src/commands/export/import-log.js';
import { ImportRefusedError } from '../../src/commands/export/line-checker.js';
import { projections } from '../../src/projections/index.js';
import { appFixture } from '../applications/support.js';
import { readModelRows } from '../support/busy-workspace.js';
import { runCli } from '../support/cli.js';
import { freshDatabase } from '../support/db.js';
import { cliJson, each, tempDir, type ExportSummary as Summary } from '../support/export.js';
import { faultInjector } from '../support/fault-injection.js';
import { checkProperty } from '../support/properties.js';

// What import refuses: a tampered export (changed, deleted, swapped or cut lines), named by its line, and any
// failure on the way; either way nothing of it is left in the target.

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
      await importExport(target.pool, projections, [{ name: 'x', lines: each(tampered) }], f.app.services.personalData);
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
  await importExport(counting.pool, projections, [{ name: 'x', lines: each(lines) }], f.app.services.personalData);
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
      const failed = await importExport(
        target.pool,
        projections,
        [{ name: 'x', lines: each(lines) }],
        f.app.services.personalData,
      ).then(
        () => false,
        () => true,
      );
      return failed && faults.fired() !== undefined && Number(await left()) === 0;
    }),
    15,
  );
  await importExport(target.pool, projections, [{ name: 'x', lines: each(lines) }], f.app.services.personalData);
  t.same(await readModelRows(target.pool, f.ws.workspace.id), await readModelRows(f.app.pool, f.ws.workspace.id));
});
