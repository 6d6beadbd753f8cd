import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { expiryInstant } from '../../src/cli/verbs/keys.js';
import { demoDefinition } from '../support/app.js';
import { runCli, runCliJson } from '../support/cli.js';
import { freshDatabase } from '../support/db.js';

t.test('key create --expires refuses a past or unparsable instant and keeps a future one', async (t) => {
  const { pool, url } = await freshDatabase(t);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vcrm-cli-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const def = demoDefinition();
  const file = path.join(dir, 'workspace.json');
  fs.writeFileSync(file, JSON.stringify(def));
  await runCliJson(url, ['workspace', 'apply', file]);

  const past = await runCli(url, ['key', 'create', def.slug, '--expires', '2020-01-01T00:00:00Z']);
  t.equal(past.code, 2);
  t.equal(
    past.stderr,
    '--expires 2020-01-01T00:00:00.000Z is not in the future: a key must expire after it is made.\n',
  );
  const unparsable = await runCli(url, ['key', 'create', def.slug, '--expires', 'tomorrow']);
  t.equal(unparsable.code, 2);
  t.match(unparsable.stderr, /^--expires "tomorrow" is not a date: use ISO 8601/);
  const now = new Date();
  for (const value of ['2027-13-01', '2027-01-31T09:00', '1700000000000', '', 'Jan 5 2099'])
    t.throws(
      () => expiryInstant(value, now),
      {
        name: 'CliError',
        message:
          `--expires "${value}" is not a date` +
          ': use ISO 8601, a date (2027-01-31) or a date and time with its zone (2027-01-31T09:00:00Z).',
      },
      `"${value}" refused`,
    );
  t.equal((await pool.query('SELECT count(*)::int AS n FROM api_keys')).rows[0].n, 0, 'no key was created');

  const future = await runCliJson<{ expires_at: string }>(url, [
    'key',
    'create',
    def.slug,
    '--expires',
    '2099-06-30T12:00:00+02:00',
  ]);
  t.equal(new Date(future.expires_at).toISOString(), '2099-06-30T10:00:00.000Z', 'the zone is honoured');
  const dateOnly = await runCliJson<{ expires_at: string }>(url, [
    'key',
    'create',
    def.slug,
    '--expires',
    '2099-01-31',
  ]);
  t.equal(new Date(dateOnly.expires_at).toISOString(), '2099-01-31T00:00:00.000Z', 'a date is midnight UTC');
});
