import pg from 'pg';
import t from 'tap';
import { describeFailure } from '../../src/cli/errors.js';
import { buildProgram } from '../../src/cli/program.js';
import { runCli } from '../support/cli.js';
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
