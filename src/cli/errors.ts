import { isCommandError, type CommandError } from '../commands/errors.js';
import { SettingError } from '../config.js';
import { DataFolderInUseError, EmbeddedPostgresSetupError } from '../storage/embedded-postgres.js';
import { CliError } from './output.js';

/** What the CLI prints for a failure, and its exit code: 2 for a refusal the user can correct, 1 for anything else (a command may name its own, as audit verify does with 3 for a broken chain). */
export interface Failure {
  message: string;
  exitCode: number;
}

/** SQLSTATE codes a command can meet from input that slipped past its own checks, and what they mean to the user. */
const DATABASE_SENTENCES: Record<string, string> = {
  '22P02': 'A value given is not in the form expected (an id is a UUID such as 0b6f3c5e-8a1d-4c2b-9e7f-1a2b3c4d5e6f).',
  '22007': 'A date given is not a date.',
  '22008': 'A date given is out of range.',
  '22001': 'A value given is too long.',
  '23505': 'That already exists.',
  '57P01': 'The database stopped while the command ran.',
  '53300': 'The database has no connection free; try again in a moment.',
};

/**
 * What a transaction pooler (PgBouncer in transaction mode) in front of the server answers when a session's own state
 * is relied on: each transaction may get another server session, where a statement prepared on the last one is
 * missing (26000) or one of the same name exists (42P05), and it refuses what it cannot pass on (08P01).
 */
const POOLER_SENTENCE =
  'DATABASE_URL names a connection pooler in transaction mode (PgBouncer, say), which hands each transaction ' +
  'another server session. Set DATABASE_DIRECT_URL to the PostgreSQL server itself (DATABASE_URL may stay on the ' +
  'pooler), or point DATABASE_URL at the server.';

function poolerRefusal(error: unknown, code: string | undefined): boolean {
  const message = error instanceof Error ? error.message : '';
  if (code === '26000' || code === '42P05') return /prepared statement/.test(message);
  return code === '08P01' && /unsupported (startup parameter|pkt type)/.test(message);
}

/** Node's errors listening for the service: the address and port come with the error. */
function listenSentence(error: unknown, code: string | undefined): string | undefined {
  if (typeof error !== 'object' || error === null || !('syscall' in error) || error.syscall !== 'listen')
    return undefined;
  const where = 'port' in error && 'address' in error ? `${String(error.address)}:${String(error.port)}` : 'the port';
  if (code === 'EADDRINUSE')
    return `Cannot listen on ${where}: another program already does. Stop it, or set PORT to a free port (HOST chooses the address).`;
  if (code === 'EACCES')
    return `Not allowed to listen on ${where} (ports below 1024 need privileges). Set PORT to a port from 1024 up.`;
  if (code === 'EADDRNOTAVAIL')
    return `Cannot listen on ${where}: this machine has no such address. Set HOST to one of its addresses (127.0.0.1, 0.0.0.0).`;
  return undefined;
}

/** Network failures reaching the database or a service, as Node names them. */
const NETWORK_SENTENCES: Record<string, string> = {
  ECONNREFUSED: 'Cannot reach the database: nothing listens at the address DATABASE_URL names.',
  ENOTFOUND: 'Cannot reach the database: the host DATABASE_URL names is unknown.',
  ETIMEDOUT: 'Cannot reach the database: the connection timed out.',
  EACCES: 'Permission denied on a file or folder the command needs (see DATA_DIR).',
};

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * The one place where a CLI failure becomes what the user reads: a refusal's own sentence, a known database or
 * network failure as a sentence, and anything else as a generic sentence; never a driver's raw message.
 */
export function describeFailure(error: unknown): Failure {
  if (error instanceof CliError) return { message: error.message, exitCode: error.exitCode };
  if (isCommandError(error)) return { message: commandErrorSentence(error), exitCode: 2 };
  if (
    error instanceof DataFolderInUseError ||
    error instanceof EmbeddedPostgresSetupError ||
    error instanceof SettingError
  )
    return { message: error.message, exitCode: 1 };
  const code = codeOf(error);
  if (poolerRefusal(error, code)) return { message: POOLER_SENTENCE, exitCode: 1 };
  const listening = listenSentence(error, code);
  if (listening) return { message: listening, exitCode: 1 };
  if (code && DATABASE_SENTENCES[code]) return { message: DATABASE_SENTENCES[code], exitCode: 1 };
  if (code && NETWORK_SENTENCES[code]) return { message: NETWORK_SENTENCES[code], exitCode: 1 };
  if (error instanceof StartupError) return { message: error.message, exitCode: 1 };
  return {
    message:
      'visa-crm failed for a reason it does not recognise. Run the command again with --debug to see the details.',
    exitCode: 1,
  };
}

/** A failure to start whose message was written for the user (configuration, data folder): printed as it is. */
export class StartupError extends Error {
  override name = 'StartupError';
}

/** `--debug` anywhere on the command line, or DEBUG set: failures also print their stack. */
export function debugRequested(argv: string[], env: NodeJS.ProcessEnv): boolean {
  return argv.includes('--debug') || Boolean(env.DEBUG);
}

export function reportFailure(error: unknown, debug: boolean): number {
  const failure = describeFailure(error);
  process.stderr.write(`${failure.message}\n`);
  if (debug) process.stderr.write(`\n${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  return failure.exitCode;
}

/**
 * A command's refusal as the CLI says it: one sentence, with the refusal's code where the API has one, so an operator
 * can look it up in the interface spec. The HTTP edge says the same refusals in the Error shape (src/http/errors.ts).
 */
export function commandErrorSentence(error: CommandError): string {
  switch (error.refusal) {
    case 'rule':
      return `Refused (${error.code}): ${error.message}${error.fields ? ` ${JSON.stringify(error.fields)}` : ''}`;
    case 'not_found':
      return `No ${error.what} with this id in this workspace and mode`;
    case 'quota_exceeded':
      return `Refused (quota_exceeded): the workspace has used its monthly quota of ${error.limit} new leads`;
    case 'captcha_failed':
      return 'Refused (captcha_failed): the captcha could not be verified';
    case 'captcha_unavailable':
      return `Refused (captcha_unavailable): ${error.reason === 'no_secret' ? 'the workspace has no captcha secret configured' : 'the captcha provider could not be reached'}`;
    case 'idempotency_key_reused':
      return 'Refused (idempotency_key_reused): the Idempotency-Key was already used with a different request';
    case 'webhook_url_refused':
      return `Refused (validation_failed): the webhook URL is refused: ${error.reason}`;
    case 'webhook_limit':
      return `Refused (webhook_limit): the workspace has reached its limit of ${error.limit} webhook endpoints${error.sandbox ? ' in test mode' : ''}`;
    case 'replay_rate_limited':
      return `Refused (rate_limited): too many replays of this endpoint; retry in ${error.retryAfterSeconds} s`;
    default: {
      const unknown: never = error;
      throw new Error(`Unknown refusal ${String(unknown)}`);
    }
  }
}
