import type { Command } from 'commander';
import { generateSecret } from '../../webhooks/signing.js';
import { listen, ListenRefusal } from '../listener.js';
import { CliError } from '../output.js';

interface ListenFlags {
  forwardTo: string;
  apiKey?: string;
  apiUrl: string;
  events?: string;
  replaySince?: string;
  live?: boolean;
  pollInterval: string;
}

const TEST_SECRET_KEY = /^[a-z]+_test_(?!pub_)[A-Za-z0-9]+$/;
const LIVE_SECRET_KEY = /^[a-z]+_live_(?!pub_)[A-Za-z0-9]+$/;

function checkedFlags(o: ListenFlags): { apiKey: string; forwardTo: URL; replaySince?: Date; pollIntervalMs: number } {
  const apiKey = o.apiKey ?? process.env.VISA_CRM_API_KEY;
  if (!apiKey) throw new CliError('Give a secret test key with --api-key or VISA_CRM_API_KEY (scope events:read).');
  if (!TEST_SECRET_KEY.test(apiKey) && !(o.live && LIVE_SECRET_KEY.test(apiKey)))
    throw new CliError(
      o.live
        ? 'The key is not a secret key (key_live_… or key_test_…).'
        : 'The key is not a secret test key (key_test_…); forwarding live events takes --live.',
    );
  let forwardTo: URL;
  try {
    forwardTo = new URL(o.forwardTo);
  } catch {
    throw new CliError(`--forward-to is not an address: ${o.forwardTo}`);
  }
  if (forwardTo.protocol !== 'http:' && forwardTo.protocol !== 'https:')
    throw new CliError('--forward-to must be an http:// or https:// address.');
  const replaySince = o.replaySince === undefined ? undefined : new Date(o.replaySince);
  if (replaySince && Number.isNaN(replaySince.getTime()))
    throw new CliError(`--replay-since is not a date and time (for example 2026-11-20T00:00Z): ${o.replaySince}`);
  const pollIntervalMs = Number(o.pollInterval);
  if (!Number.isInteger(pollIntervalMs) || pollIntervalMs < 10 || pollIntervalMs > 60_000)
    throw new CliError('--poll-interval is a number of milliseconds from 10 to 60000.');
  return { apiKey, forwardTo, replaySince, pollIntervalMs };
}

export function registerListenVerbs(program: Command): void {
  program
    .command('listen')
    .description(
      "forward the workspace's webhook events to a local receiver, signed as deliveries are (an API client: needs a secret test key with events:read, no database)",
    )
    .requiredOption('--forward-to <url>', 'where to POST each event, for example http://localhost:4000/hooks')
    .option('--api-key <key>', 'a secret test key with the events:read scope (or VISA_CRM_API_KEY)')
    .option('--api-url <url>', "the service's address", process.env.VISA_CRM_API_URL ?? 'http://127.0.0.1:3000')
    .option('--events <kinds>', 'comma-separated kinds and prefixes, for example lead.*,application.outcome')
    .option('--replay-since <time>', 'first send the events created since then, for example 2026-11-20T00:00Z')
    .option('--live', 'accept a live secret key (forwards live events)')
    .option('--poll-interval <ms>', 'how often to ask for new events when none are waiting', '1000')
    .action(async (o: ListenFlags) => {
      const flags = checkedFlags(o);
      const secret = generateSecret();
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      const print = (line: string) => process.stdout.write(`${line}\n`);
      try {
        const { forwarded } = await listen({
          apiUrl: o.apiUrl,
          apiKey: flags.apiKey,
          forwardTo: flags.forwardTo.href,
          events: o.events,
          replaySince: flags.replaySince,
          secret,
          pollIntervalMs: flags.pollIntervalMs,
          signal: stop.signal,
          print,
          onReady: () => print(`Ready. Signing secret for ${flags.forwardTo.href}: ${secret} (Ctrl-C to stop)`),
        });
        print(`Stopped after forwarding ${forwarded} event${forwarded === 1 ? '' : 's'}.`);
      } catch (error) {
        if (error instanceof ListenRefusal) throw new CliError(error.message);
        throw error;
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    });
}
