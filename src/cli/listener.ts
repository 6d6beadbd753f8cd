import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { signatureHeader, standardSignatureHeader } from '../webhooks/signing.js';
import { parseJsonText } from '../shared/json-text.js';

/** An event as the Events API answers it (the delivery envelope). */
interface Envelope {
  id: string;
  event: string;
  created_at: string;
  [field: string]: unknown;
}

export interface ListenOptions {
  apiUrl: string;
  apiKey: string;
  forwardTo: string;
  /** The `types` filter of the Events API: kinds and prefixes such as `lead.*`. */
  events?: string;
  /** Sends what happened since this instant first. */
  replaySince?: Date;
  /** The signing secret every forwarded event is signed with, as a delivery is signed with its endpoint's. */
  secret: string;
  pollIntervalMs: number;
  signal: AbortSignal;
  /** One line per event and per problem, for the terminal. */
  print: (line: string) => void;
  /** Called once the start is fixed: every event created from then on will be forwarded. */
  onReady: () => void;
  now?: () => Date;
}

export class ListenRefusal extends Error {}

const USER_AGENT = 'Service-Webhooks/1.0 (visa-crm listen)';
const PAGE = 100;
const MAX_BACKOFF_MS = 15_000;

/**
 * Follows the Events API and forwards each event to a local receiver, signed as a delivery: oldest first after the
 * newest event at start (or from `replaySince`), one event after another by `starting_after`, so a reconnect neither
 * misses nor repeats one (the API's oldest-first pages read only what no running transaction can still slot in behind).
 * Ends when the signal aborts, after the event in hand.
 */
export async function listen(options: ListenOptions): Promise<{ forwarded: number }> {
  const api = new EventsApi(options.apiUrl, options.apiKey, options.signal);
  let after = options.replaySince ? undefined : await untilReached(options, () => api.newestId(options.events));
  if (options.signal.aborted) return { forwarded: 0 };
  options.onReady();
  let since = options.replaySince;
  let sequence = 0;
  let previous: string | undefined;
  let forwarded = 0;
  while (!options.signal.aborted) {
    const page = await untilReached(options, () => api.page({ after, since, events: options.events }));
    if (!page) break;
    for (const event of page.data) {
      sequence += 1;
      await forward(options, event, sequence, previous);
      previous = event.id;
      after = event.id;
      since = undefined;
      forwarded += 1;
    }
    if (!page.has_more) await pause(options.pollIntervalMs, options.signal);
  }
  return { forwarded };
}

/** The answer of a call to the Events API, asked again (with backoff) while the service cannot be reached. */
async function untilReached<T>(options: ListenOptions, call: () => Promise<T>): Promise<T | undefined> {
  let backoff = options.pollIntervalMs;
  while (!options.signal.aborted) {
    try {
      return await call();
    } catch (error) {
      if (options.signal.aborted) return undefined;
      if (error instanceof ListenRefusal) throw error;
      options.print(
        `Cannot reach ${options.apiUrl} (${reason(error)}); trying again in ${Math.round(backoff / 1000)} s`,
      );
      await pause(backoff, options.signal);
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    }
  }
  return undefined;
}

/** Posts one event to the receiver with the headers and both signatures of a delivery, and prints the outcome. */
async function forward(options: ListenOptions, event: Envelope, sequence: number, previous: string | undefined) {
  const body = JSON.stringify(event);
  const started = Date.now();
  const t = Math.floor((options.now?.() ?? new Date()).getTime() / 1000);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-service-event': event.event,
    'x-service-delivery': randomUUID(),
    'x-service-signature': signatureHeader([options.secret], t, body),
    'x-service-sequence': String(sequence),
    ...(previous ? { 'x-service-previous-event': previous } : {}),
    'webhook-id': event.id,
    'webhook-timestamp': String(t),
    'webhook-signature': standardSignatureHeader([options.secret], event.id, t, body),
  };
  let outcome: string;
  try {
    const response = await fetch(options.forwardTo, {
      method: 'POST',
      headers,
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(10_000),
    });
    await response.arrayBuffer();
    outcome = `[${response.status}]`;
  } catch (error) {
    outcome = `[failed: ${reason(error)}]`;
  }
  const at = new Date().toISOString().replace('T', ' ').slice(0, 19);
  options.print(`${at}  ${event.event}  ${event.id}  --> ${options.forwardTo} ${outcome} ${Date.now() - started} ms`);
}

/** The few calls of the Events API the listener makes. */
class EventsApi {
  private readonly base: string;
  private readonly key: string;
  private readonly signal: AbortSignal;
  constructor(base: string, key: string, signal: AbortSignal) {
    this.base = base;
    this.key = key;
    this.signal = signal;
  }

  /** The newest event's id now: where following starts when nothing is to be replayed. */
  async newestId(events: string | undefined): Promise<string | undefined> {
    const page = await this.get(this.query({ order: 'desc', limit: '1', types: events }));
    return page.data[0]?.id;
  }

  page(o: { after?: string; since?: Date; events?: string }): Promise<{ data: Envelope[]; has_more: boolean }> {
    return this.get(
      this.query({
        order: 'asc',
        limit: String(PAGE),
        types: o.events,
        starting_after: o.after,
        'created[gte]': o.since?.toISOString(),
      }),
    );
  }

  private query(params: Record<string, string | undefined>): string {
    const defined = Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined);
    return new URLSearchParams(defined).toString();
  }

  private async get(query: string): Promise<{ data: Envelope[]; has_more: boolean }> {
    const response = await fetch(`${this.base.replace(/\/$/, '')}/v1/events?${query}`, {
      headers: { authorization: `Bearer ${this.key}` },
      signal: this.signal,
    });
    const text = await response.text();
    if (response.ok) return parseJsonText(text) as { data: Envelope[]; has_more: boolean };
    const message = messageOf(text);
    // A refusal that waiting will not change ends the listener; overload and rate limits are waited out.
    if (response.status === 429 || response.status >= 500) throw new Error(`${response.status} ${message}`);
    throw new ListenRefusal(`The Events API refused: ${message} (${response.status})`);
  }
}

function messageOf(text: string): string {
  try {
    const body = JSON.parse(text) as { message?: unknown };
    return typeof body.message === 'string' ? body.message : text.slice(0, 200);
  } catch {
    return text.slice(0, 200);
  }
}

function reason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } }).cause;
  if (cause && typeof cause.code === 'string') return cause.code;
  return error instanceof Error ? error.message : String(error);
}

async function pause(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch {
    // Aborted: the loop ends at its next check.
  }
}
