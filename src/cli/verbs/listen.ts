import { CommanderError, type Command } from 'commander';
import { kindsOf } from '../../webhooks/event-feed.js';
import { configFolder, stableSecret } from '../listen-secrets.js';
import { listen, ListenRefusal, type ListenOutcome } from '../listener.js';
import { CliError } from '../output.js';

interface ListenFlags {
  forwardTo: string;
  apiKey?: string;
  apiUrl: string;
  events?: string;
  replaySince?: string;
  live?: boolean;
  pollInterval: string;
  secret?: string;
}

interface CheckedFlags {
  apiKey: string;
  apiUrl: URL;
  forwardTo: URL;
  events?: string;
  replaySince?: Date;
  pollIntervalMs: number;
  secret?: string;
}

const TEST_SECRET_KEY = /^[a-z]+_test_(?!pub_)[A-Za-z0-9]+$/;
const LIVE_SECRET_KEY = /^[a-z]+_live_(?!pub_)[A-Za-z0-9]+$/;
/** The form of the secrets the service issues to its endpoints, so a receiver's configured secret can be reused. */
const SIGNING_SECRET = /^whsec_[A-Za-z0-9]{32}$/;
/** Exit code of a run stopped with events the receiver had not accepted. */
const EXIT_PENDING = 3;

/** An http:// or https:// address given to an option, or the option's refusal in a sentence. */
function addressOf(option: string, value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliError(`${option} is not an address (for example http://127.0.0.1:4000/hooks): ${value}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new CliError(`${option} must be an http:// or https:// address: ${value}`);
  if (url.username || url.password) throw new CliError(`${option} must not carry a user name or password.`);
  return url;
}

function apiKeyOf(o: ListenFlags): string {
  const apiKey = o.apiKey ?? process.env.VISA_CRM_API_KEY;
  if (!apiKey) throw new CliError('Give a secret test key with --api-key or VISA_CRM_API_KEY (scope events:read).');
  if (!TEST_SECRET_KEY.test(apiKey) && !(o.live && LIVE_SECRET_KEY.test(apiKey)))
    throw new CliError(
      o.live
        ? 'The key is not a secret key (key_live_… or key_test_…).'
        : 'The key is not a secret test key (key_test_…); forwarding live events takes --live.',
    );
  return apiKey;
}

/** The `--events` filter as the Events API reads it (kinds and `prefix.*`), refused by name when it names no kind. */
function eventsOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const entries = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0)
    throw new CliError('--events names no kind; give kinds or prefixes such as lead.*,application.outcome.');
  const { unknown } = kindsOf(entries);
  if (unknown.length > 0)
    throw new CliError(
      `--events names no event kind: ${unknown.join(', ')} (kinds such as lead.created, or prefixes such as lead.*).`,
    );
  return entries.join(',');
}

function checkedFlags(o: ListenFlags): CheckedFlags {
  const apiKey = apiKeyOf(o);
  const apiUrl = addressOf('--api-url', o.apiUrl);
  const forwardTo = addressOf('--forward-to', o.forwardTo);
  const events = eventsOf(o.events);
  const replaySince = o.replaySince === undefined ? undefined : new Date(o.replaySince);
  if (replaySince && Number.isNaN(replaySince.getTime()))
    throw new CliError(`--replay-since is not a date and time (for example 2026-11-20T00:00Z): ${o.replaySince}`);
  const pollIntervalMs = Number(o.pollInterval);
  if (!/^\d+$/.test(o.pollInterval.trim()) || pollIntervalMs < 10 || pollIntervalMs > 60_000)
    throw new CliError(`--poll-interval is a number of milliseconds from 10 to 60000: ${o.pollInterval}`);
  if (o.secret !== undefined && !SIGNING_SECRET.test(o.secret))
    throw new CliError('--secret is a signing secret as the service issues them: whsec_ and 32 letters and digits.');
  return { apiKey, apiUrl, forwardTo, events, replaySince, pollIntervalMs, secret: o.secret };
}

/** The secret given, or the one kept for this key's workspace and this receiver (made on the first run). */
function signingSecret(flags: CheckedFlags): { secret: string; origin: string } {
  if (flags.secret) return { secret: flags.secret, origin: 'given by --secret' };
  const folder = configFolder();
  try {
    const { secret, kept, file } = stableSecret(folder, flags.apiKey, flags.forwardTo.href);
    return { secret, origin: kept ? `kept in ${file}` : `new, kept in ${file} for the next runs` };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'an error';
    throw new CliError(
      `Cannot keep the signing secret in ${folder} (${code}): set VISA_CRM_CONFIG_DIR to a folder you can write, or pass --secret.`,
      1,
    );
  }
}

/** The last line: what the receiver accepted, and what it had not when the run stopped, with how to send it. */
function stopLine(outcome: ListenOutcome): string {
  const { forwarded, pending, morePending } = outcome;
  const done = `Stopped after forwarding ${forwarded} event${forwarded === 1 ? '' : 's'}`;
  const first = pending[0];
  if (!first) return morePending ? `${done}; more events were waiting in the Events API.` : `${done}; none pending.`;
  const count = `${morePending ? 'at least ' : ''}${pending.length} event${pending.length === 1 ? '' : 's'}`;
  return (
    `${done}; ${count} not forwarded (still pending), the first ${first.id} (${first.event}, created ` +
    `${first.created_at}). Run again with --replay-since ${first.created_at} to send them (receivers drop the ` +
    `ones they already have by id).`
  );
}

export function registerListenVerbs(program: Command): void {
  program
    .command('listen')
    .description(
      "forward the workspace's webhook events to a local receiver, signed as deliveries are (an API client: needs a " +
        'secret test key with events:read, no database). An event the receiver does not accept is tried again with ' +
        'backoff, the later ones waiting behind it, until it is accepted or the run stops. Exit status: 0 when ' +
        'stopped with nothing pending, 3 when events were left pending, 2 for a refused option or key.',
    )
    .requiredOption('--forward-to <url>', 'where to POST each event, for example http://localhost:4000/hooks')
    .option('--api-key <key>', 'a secret test key with the events:read scope (or VISA_CRM_API_KEY)')
    .option('--api-url <url>', "the service's address", process.env.VISA_CRM_API_URL ?? 'http://127.0.0.1:3000')
    .option('--events <kinds>', 'comma-separated kinds and prefixes, for example lead.*,application.outcome')
    .option('--replay-since <time>', 'first send the events created since then, for example 2026-11-20T00:00Z')
    .option('--live', 'accept a live secret key (forwards live events)')
    .option('--poll-interval <ms>', 'how often to ask for new events when none are waiting', '1000')
    .option(
      '--secret <whsec_…>',
      'sign with this secret; without it, the secret kept for this key and receiver in the CLI configuration folder ' +
        '(VISA_CRM_CONFIG_DIR, else visa-crm under XDG_CONFIG_HOME or ~/.config) is used, made on the first run',
    )
    // Commander's own refusals (an unknown option, a missing value or --forward-to) exit 2 as the others do.
    .exitOverride((error) => {
      throw new CommanderError(error.exitCode === 0 ? 0 : 2, error.code, error.message);
    })
    .action(async (o: ListenFlags) => {
      const flags = checkedFlags(o);
      const { secret, origin } = signingSecret(flags);
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      const print = (line: string) => process.stdout.write(`${line}\n`);
      try {
        const outcome = await listen({
          apiUrl: flags.apiUrl.href,
          apiKey: flags.apiKey,
          forwardTo: flags.forwardTo.href,
          events: flags.events,
          replaySince: flags.replaySince,
          secret,
          pollIntervalMs: flags.pollIntervalMs,
          signal: stop.signal,
          print,
          onReady: () =>
            print(`Ready. Signing secret for ${flags.forwardTo.href}: ${secret} (${origin}; Ctrl-C to stop)`),
        });
        print(stopLine(outcome));
        if (outcome.pending.length > 0) process.exitCode = EXIT_PENDING;
      } catch (error) {
        if (error instanceof ListenRefusal) throw new CliError(error.message);
        throw error;
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    });
}
