import zlib from 'node:zlib';
import t from 'tap';
import { appFixture } from '../applications/support.js';
import { readModelRows } from '../support/busy-workspace.js';
import { pipeCli, runCli } from '../support/cli.js';
import { freshDatabase } from '../support/db.js';

// Import from standard input through the real command-line tool: `visa-crm export ws | visa-crm import -` with the two
// processes joined by a real pipe, gzip detected on a pipe as on a file, and a cut stream refused with nothing kept.

// Each CLI run starts a Node process (seconds each on a loaded two-core machine): more than tap's default 180 s per file.
t.setTimeout(420_000);

async function eventsIn(pool: import('pg').Pool): Promise<number> {
  return (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM events')).rows[0]!.n;
}

t.test('export piped into import: plain with `-`, gzip with no file name, the same read models', async (t) => {
  const f = await appFixture(t);
  const source = f.app.services.config.databaseUrl!;
  await f.convert(await f.lead());
  await f.lead();
  const expected = await readModelRows(f.app.pool, f.ws.workspace.id);

  for (const [label, exportArgs, importArgs] of [
    ['plain, `import -`', ['export', f.ws.workspace.slug], ['--json', 'import', '-']],
    ['gzip, `import` with no file', ['export', f.ws.workspace.slug, '--gzip'], ['--json', 'import']],
  ] as const) {
    const target = await freshDatabase(t);
    const imported = await pipeCli(
      { databaseUrl: source, args: [...exportArgs] },
      { databaseUrl: target.url, args: [...importArgs] },
    );
    t.equal(imported.firstCode, 0, `${label}: export ran`);
    t.equal(imported.code, 0, `${label}: import ran (${imported.stderr})`);
    const summary = JSON.parse(imported.stdout) as { events: number; workspace: { slug: string } };
    t.equal(summary.workspace.slug, f.ws.workspace.slug, `${label}: the workspace imported`);
    t.ok(summary.events > 0);
    t.same(await readModelRows(target.pool, f.ws.workspace.id), expected, `${label}: read models as the source's`);
  }
});

t.test('a cut export on standard input is refused and nothing is kept; stdin is read once at most', async (t) => {
  const f = await appFixture(t);
  const source = f.app.services.config.databaseUrl!;
  await f.lead();
  await f.lead();
  const full = await runCli(source, ['export', f.ws.workspace.slug]);
  t.equal(full.code, 0, full.stderr);
  const bytes = Buffer.from(full.stdout);
  const lines = full.stdout.trimEnd().split('\n');

  const target = await freshDatabase(t);
  const noTrailer = await runCli(target.url, ['import', '-'], {}, Buffer.from(lines.slice(0, -1).join('\n') + '\n'));
  t.equal(noTrailer.code, 2, 'an export without its trailer is refused');
  t.match(noTrailer.stderr, /Import refused/);
  const cutGzip = zlib.gzipSync(bytes).subarray(0, Math.floor(bytes.length / 3));
  const cut = await runCli(target.url, ['import'], {}, cutGzip);
  t.not(cut.code, 0, 'a gzip stream cut short is refused');
  t.equal(await eventsIn(target.pool), 0, 'nothing of either was imported');

  const twice = await runCli(target.url, ['import', '-', '-'], {}, bytes);
  t.equal(twice.code, 2);
  t.match(twice.stderr, /Standard input \(-\) can be read only once/);
  const whole = await runCli(target.url, ['--json', 'import', '-'], {}, zlib.gzipSync(bytes));
  t.equal(whole.code, 0, `the whole export, gzip, through stdin: ${whole.stderr}`);
  t.equal(await eventsIn(target.pool), lines.length - 2, 'every event line imported');
});
