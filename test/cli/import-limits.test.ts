import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import t from 'tap';
import { headerLine } from '../../src/commands/export/export-log.js';
import type { Workspace } from '../../src/workspaces/workspace.js';
import { runCli } from '../support/cli.js';
import { freshDatabase } from '../support/db.js';
import { tempDir } from '../support/export.js';

// `visa-crm import` bounds the work of any input: a line past 16 MiB and gzip data expanding past
// a hundredfold are refused, naming the line, with nothing imported.

// Each CLI run starts a Node process (seconds each on a loaded two-core machine).
t.setTimeout(300_000);

const WORKSPACE = { id: randomUUID(), slug: 'limits', name: 'Limits', plan: 'growth', status: 'active', settings: {} };
const HEADER = JSON.stringify(headerLine(WORKSPACE as unknown as Workspace, null, new Date()));

async function eventsIn(pool: import('pg').Pool): Promise<number> {
  return (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM events')).rows[0]!.n;
}

t.test('a line past the cap is refused at its number; gzip past the expansion cap too', async (t) => {
  const target = await freshDatabase(t);
  const dir = tempDir(t);
  const long = path.join(dir, 'long.ndjson');
  fs.writeFileSync(long, `${HEADER}\n${'x'.repeat(16 * 1024 * 1024 + 1)}\n`);
  const refusedLong = await runCli(target.url, ['import', long]);
  t.not(refusedLong.code, 0);
  t.match(refusedLong.stderr, /Import refused: .*long\.ndjson, line 2: the line is longer than 16777216 bytes/);

  const bomb = path.join(dir, 'bomb.ndjson.gz');
  fs.writeFileSync(bomb, zlib.gzipSync(Buffer.alloc(256 * 1024 * 1024, 'x')));
  t.ok(fs.statSync(bomb).size < 1024 * 1024, 'a quarter of a gigabyte in under one megabyte');
  const refusedBomb = await runCli(target.url, ['import', bomb]);
  t.not(refusedBomb.code, 0);
  t.match(
    refusedBomb.stderr,
    /Import refused: .*bomb\.ndjson\.gz, line 1: the gzip data expands to more than 100 times/,
  );

  const piped = await runCli(target.url, ['import', '-'], {}, fs.readFileSync(bomb));
  t.match(piped.stderr, /Import refused: standard input, line 1: the gzip data expands/, 'from standard input too');
  t.equal(await eventsIn(target.pool), 0, 'nothing imported');
});
