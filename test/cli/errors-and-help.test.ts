import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { describeFailure } from '../../src/cli/errors.js';
import { buildProgram } from '../../src/cli/program.js';
import { demoDefinition } from '../support/app.js';
import { runCli, runCliJson } from '../support/cli.js';
import { freshDatabase } from '../support/db.js';

const MALFORMED = 'not-a-uuid';
/** A stack line as Node prints it: what the user must never see unless they ask for it. */
const STACK_LINE = /^\s+at .+:\d+:\d+\)?$/m;

t.test('a database error that slips through becomes a sentence; an unknown one a generic sentence', async (t) => {
  const { pool, url } = await freshDatabase(t);
  const invalidUuid = await pool.query('SELECT $1::uuid', [MALFORMED]).catch((error: unknown) => error);
  t.ok(invalidUuid instanceof pg.DatabaseError, 'a real driver error');
  const described = describeFailure(invalidUuid);
  t.equal(described.exitCode, 1);
  t.match(described.message, /^A value given is not in the form expected/);
  t.notMatch(described.message, /invalid input syntax/, 'not the driver message');

  // A database that does not exist: an error the CLI has no sentence for.
  const missing = new URL(url);
  missing.pathname = '/vcrm_no_such_database';
  const plain = await runCli(missing.toString(), ['workspace', 'list']);
  t.equal(plain.code, 1, 'exit code 1 for an unknown failure');
  t.equal(
    plain.stderr,
    'visa-crm failed for a reason it does not recognise. Run the command again with --debug to see the details.\n',
  );
  t.notMatch(plain.stderr, /vcrm_no_such_database/, 'no driver message');

  for (const [how, args, env] of [
    ['--debug', ['--debug', 'workspace', 'list'], {}],
    ['DEBUG', ['workspace', 'list'], { DEBUG: '1' }],
  ] as const) {
    const debug = await runCli(missing.toString(), [...args], env);
    t.equal(debug.code, 1, how);
    t.match(debug.stderr, /^visa-crm failed for a reason it does not recognise/, `${how}: the sentence first`);
    t.match(debug.stderr, /vcrm_no_such_database/, `${how}: then the error itself`);
    t.match(debug.stderr, STACK_LINE, `${how}: with its stack`);
  }
  t.notMatch(plain.stderr, STACK_LINE, 'no stack without --debug');

  const badConfig = await runCli(url, ['workspace', 'list'], { PORT: 'eighty' });
  t.equal(badConfig.code, 1);
  t.equal(
    badConfig.stderr,
    'PORT must be a non-negative integer, got "eighty"\n',
    'a configuration refusal as written',
  );
});

t.test('required options show as required in --help', async (t) => {
  const program = buildProgram();
  const help = (path: string[]) =>
    path.reduce((command, name) => command.commands.find((c) => c.name() === name)!, program).helpInformation();
  const required: Array<[string[], string]> = [
    [['application', 'convert'], '--as <email>'],
    [['application', 'move'], '--as <email>'],
    [['application', 'outcome'], '--as <email>'],
    [['webhook', 'test'], '--as <email>'],
    [['webhook', 'resend'], '--as <email>'],
    [['webhook', 'rotate-secret'], '--as <email>'],
    [['sandbox', 'list'], '--key <keyId>'],
  ];
  for (const [path, option] of required) {
    const text = help(path);
    const described = text.slice(text.indexOf(option), text.indexOf('-h, --help'));
    t.match(described.replace(/\s+/g, ' '), /\(required\)/, `${path.join(' ')}: ${option} is marked required`);
  }
  t.notMatch(help(['key', 'create']), /\(required\)/, 'optional options are not marked');
  t.notMatch(help(['application', 'show']), /\(required\)/, 'nor commands without required options');
});

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
  for (const value of ['tomorrow', '2027-13-01', '2027-01-31T09:00', '1700000000000', '']) {
    const unparsable = await runCli(url, ['key', 'create', def.slug, '--expires', value]);
    t.equal(unparsable.code, 2, `"${value}" refused`);
    t.match(unparsable.stderr, new RegExp(`^--expires "${value}" is not a date: use ISO 8601`), `"${value}" named`);
  }
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
