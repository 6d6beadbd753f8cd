/*
 * Commander's own exits (help, a refused option or command, a missing argument) leave through the tool's one exit path,
 * never through process.exit(): that call can hang a process for good (nodejs/node#54918, docs/decisions.md).
 */
import { CommanderError } from 'commander';
import t from 'tap';
import { buildProgram } from '../../src/cli/program.js';
import { runCli } from '../support/cli.js';

// No database is reached by any of these: the line is refused (or answered) before a command runs.
const NO_DATABASE = 'postgres://127.0.0.1:1/none';

/** Commander's exits for the command lines below: code, and the exit status the tool ends with. */
const CASES: Array<{ args: string[]; code: string; exitCode: number }> = [
  { args: ['--help'], code: 'commander.helpDisplayed', exitCode: 0 },
  { args: ['key', 'revoke', '--help'], code: 'commander.helpDisplayed', exitCode: 0 },
  { args: [], code: 'commander.help', exitCode: 1 },
  { args: ['no-such-verb'], code: 'commander.unknownCommand', exitCode: 1 },
  { args: ['key', 'list', 'demo', '--frobnicate'], code: 'commander.unknownOption', exitCode: 1 },
  { args: ['key', 'revoke', 'demo'], code: 'commander.missingArgument', exitCode: 1 },
  {
    args: ['listen', '--forward-to', 'http://127.0.0.1:4000/', '--frobnicate'],
    code: 'commander.unknownOption',
    exitCode: 2,
  },
  { args: ['listen'], code: 'commander.missingMandatoryOptionValue', exitCode: 2 },
  { args: ['listen', '--help'], code: 'commander.helpDisplayed', exitCode: 0 },
];

/** Runs the program in this process with process.exit() replaced by a throw, and stdout/stderr captured. */
async function parseInProcess(args: string[]): Promise<{ error: unknown; exited: number[]; output: string }> {
  const exited: number[] = [];
  let output = '';
  const original = { exit: process.exit, out: process.stdout.write, err: process.stderr.write };
  process.exit = ((code?: number) => {
    exited.push(code ?? 0);
    throw new Error(`process.exit(${code}) called`);
  }) as typeof process.exit;
  const capture = ((chunk: string | Uint8Array) => {
    output += String(chunk);
    return true;
  }) as typeof process.stdout.write;
  process.stdout.write = capture;
  process.stderr.write = capture;
  try {
    await buildProgram().parseAsync(['node', 'visa-crm', ...args]);
    return { error: undefined, exited, output };
  } catch (error) {
    return { error, exited, output };
  } finally {
    process.exit = original.exit;
    process.stdout.write = original.out;
    process.stderr.write = original.err;
  }
}

t.test('every exit of commander throws its CommanderError instead of calling process.exit()', async (t) => {
  for (const { args, code, exitCode } of CASES) {
    const how = `visa-crm ${args.join(' ')}`;
    const { error, exited, output } = await parseInProcess(args);
    t.same(exited, [], `${how}: process.exit() not called`);
    t.ok(error instanceof CommanderError, `${how}: a CommanderError`);
    t.equal((error as CommanderError).code, code, `${how}: ${code}`);
    t.equal((error as CommanderError).exitCode, exitCode, `${how}: exit status ${exitCode}`);
    t.ok(output.length > 0, `${how}: commander printed its help or refusal`);
  }
});

t.test('the built tool ends with commander exit status and prints its words once', async (t) => {
  for (const { args, exitCode } of CASES) {
    const how = `visa-crm ${args.join(' ')}`;
    const run = await runCli(NO_DATABASE, args);
    t.equal(run.code, exitCode, `${how}: exit status ${exitCode}`);
    if (exitCode === 0) {
      t.match(run.stdout, /^Usage: visa-crm/, `${how}: the help on stdout`);
      t.equal(run.stderr, '', `${how}: nothing on stderr`);
    } else if (args.length === 0) {
      t.match(run.stderr, /^Usage: visa-crm/, `${how}: the help on stderr`);
    } else {
      t.equal(run.stderr.match(/^error: /gm)?.length, 1, `${how}: one refusal on stderr`);
      t.notMatch(run.stderr, /failed for a reason it does not recognise/, `${how}: not reported as a failure`);
    }
  }
});
