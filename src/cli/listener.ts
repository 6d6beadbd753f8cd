import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { signatureHeader, standardSignatureHeader } from '../webhooks/signing.js';
import { parseJsonText } from '../shared/json-text.js';

/** An event as the Events API answers it (the delivery envelope). */
export interface Envelope {
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
  /** The first wait before a failed forward is tried again (doubled after each failure, up to `maxRetryMs`). */
  firstRetryMs?: number;
  maxRetryMs?: number;
}

/** What a run did: events the receiver accepted, and those fetched but not accepted when it stopped. */
export interface ListenOutcome {
  forwarded: number;
  /** Fetched from the Events API and not accepted by the receiver (oldest first). */
  pending: Envelope[];
  /** More events may wait beyond `pending` (the last page said so, or the queue was full). */
  morePending: boolean;
}

export class ListenRefusal extends Error {}

const USER_AGENT = 'Service-Webhooks/1.0 (visa-crm listen)';
const PAGE = 100;
/** About this many events wait in memory behind one the receiver refuses; the rest wait in the Events API. */
const MAX_QUEUE = 1_000;
const MAX_API_BACKOFF_MS = 15_000;
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;
const FORWARD_TIMEOUT_MS = 10_000;

/** An event on its way to the receiver: its place in the run and its delivery id are kept across attempts. */
interface Forward {
  event: Envelope;
  sequence: number;
  previous: string | undefined;
  delivery: string;
  attempts: number;
  retryAt: number;
}

/**
 * Follows the Events API and forwards each event to a local receiver, signed as a delivery: oldest first after the
 * newest event at start (or from `replaySince`), one event after another by `starting_after`, so a reconnect neither
 * misses nor repeats one (the API's oldest-first pages read only what no running transaction can still slot in behind).
 * An event the receiver does not accept (no answer, not 2xx) is tried again with backoff, and the events after it wait
 * behind it, as deliveries to one endpoint keep their order: nothing is dropped while the run lasts. Ends when the
 * signal aborts, and says what was forwarded and what was still pending.
 */
export async function listen(options: ListenOptions): Promise<ListenOutcome> {
  const api = new EventsApi(options.apiUrl, options.apiKey, options.signal);
  // The first call also checks the key and the filter: a refusal, or an address that names no host, ends the run.
  const newest = await untilReached(options, () => api.newestId(options.events), { atStart: true });
  if (options.signal.aborted) return { forwarded: 0, pending: [], morePending: false };
  options.onReady();
  const run = new ForwardRun(options);
  let after = options.replaySince ? undefined : newest;
  let since = options.replaySince;
  let nextPollAt = 0;
  let apiBackoff = options.pollIntervalMs;
  let morePending = false;
  while (!options.signal.aborted) {
    const room = run.queue.length + PAGE <= MAX_QUEUE;
    if (room && Date.now() >= nextPollAt) {
      const page = await tryOnce(options, () => api.page({ after, since, events: options.events }));
      if (page) {
        apiBackoff = options.pollIntervalMs;
        for (const event of page.data) run.enqueue(event);
        if (page.data.length > 0) {
          after = page.data.at(-1)!.id;
          since = undefined;
        }
        morePending = page.has_more;
        nextPollAt = page.has_more ? 0 : Date.now() + options.pollIntervalMs;
      } else {
        nextPollAt = Date.now() + apiBackoff;
        apiBackoff = Math.min(apiBackoff * 2, MAX_API_BACKOFF_MS);
      }
    }
    if (await run.forwardDue()) continue;
    const canFetch = run.queue.length + PAGE <= MAX_QUEUE;
    const wakeAt = Math.min(canFetch ? nextPollAt : Infinity, run.queue[0]?.retryAt ?? Infinity);
    await pause(Math.max(0, wakeAt - Date.now()), options.signal);
  }
  return {
    forwarded: run.forwarded,
    pending: run.queue.map((f) => f.event),
    morePending: morePending || run.queue.length + PAGE > MAX_QUEUE,
  };
}

/** The run's queue of events for the receiver, forwarded one at a time, in order. */
class ForwardRun {
  readonly queue: Forward[] = [];
  forwarded = 0;
  private sequence = 0;
  private previous: string | undefined;
  private backoff: number;
  private readonly options: ListenOptions;
  constructor(options: ListenOptions) {
    this.options = options;
    this.backoff = options.firstRetryMs ?? FIRST_RETRY_MS;
  }

  enqueue(event: Envelope): void {
    this.sequence += 1;
    this.queue.push({
      event,
      sequence: this.sequence,
      previous: this.previous,
      delivery: randomUUID(),
      attempts: 0,
      retryAt: 0,
    });
    this.previous = event.id;
  }

  /** Sends the oldest event if it is due; false when none was (nothing queued, or waiting for its next attempt). */
  async forwardDue(): Promise<boolean> {
    const head = this.queue[0];
    if (!head || Date.now() < head.retryAt) return false;
    head.attempts += 1;
    const outcome = await forward(this.options, head);
    if (this.options.signal.aborted && !outcome.accepted) return true;
    if (outcome.accepted) {
      this.queue.shift();
      this.forwarded += 1;
      this.backoff = this.options.firstRetryMs ?? FIRST_RETRY_MS;
      this.options.print(`${outcome.line}${head.attempts > 1 ? ` (attempt ${head.attempts})` : ''}`);
      return true;
    }
    head.retryAt = Date.now() + this.backoff;
    const waiting = this.queue.length - 1;
    this.options.print(
      `${outcome.line}; attempt ${head.attempts}, trying again in ${seconds(this.backoff)}` +
        (waiting > 0 ? ` (${waiting} more waiting behind it)` : ''),
    );
    this.backoff = Math.min(this.backoff * 2, this.options.maxRetryMs ?? MAX_RETRY_MS);
    return true;
  }
}

const seconds = (ms: number) => (ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`);

/**
 * The answer of a call to the Events API, asked again (with backoff) while the service cannot be reached. At the
 * start, an address whose host is unknown is refused: waiting will not make it known.
 */
async function untilReached<T>(
  options: ListenOptions,
  call: () => Promise<T>,
  o: { atStart: boolean },
): Promise<T | undefined> {
  let backoff = options.pollIntervalMs;
  while (!options.signal.aborted) {
    try {
      return await call();
    } catch (error) {
      if (options.signal.aborted) return undefined;
      if (error instanceof ListenRefusal) throw error;
      // EAI_AGAIN too: a resolver that cannot answer at the start is more often a mistyped name than a passing fault.
      if (o.atStart && (reason(error) === 'ENOTFOUND' || reason(error) === 'EAI_AGAIN'))
        throw new ListenRefusal(`--api-url names a host that is unknown: ${options.apiUrl}`);
      options.print(`Cannot reach ${options.apiUrl} (${reason(error)}); trying again in ${seconds(backoff)}`);
      await pause(backoff, options.signal);
      backoff = Math.min(backoff * 2, MAX_API_BACKOFF_MS);
    }
  }
  return undefined;
}

/** One call; a failure that waiting may mend is printed and answers undefined, a refusal is thrown. */
async function tryOnce<T>(options: ListenOptions, call: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ListenRefusal) throw error;
    if (!options.signal.aborted) options.print(`Cannot reach ${options.apiUrl} (${reason(error)}); trying again`);
    return undefined;
  }
}

/**
 * Posts one event to the receiver with the headers and both signatures of a delivery (signed at this attempt, its
 * delivery id kept across attempts); accepted on a 2xx answer, as a delivery is. Never follows a redirect.
 */
async function forward(options: ListenOptions, item: Forward): Promise<{ accepted: boolean; line: string }> {
  const { event } = item;
  const body = JSON.stringify(event);
  const started = Date.now();
  const t = Math.floor((options.now?.() ?? new Date()).getTime() / 1000);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-service-event': event.event,
    'x-service-delivery': item.delivery,
    'x-service-signature': signatureHeader([options.secret], t, body),
    'x-service-sequence': String(item.sequence),
    ...(item.previous ? { 'x-service-previous-event': item.previous } : {}),
    'webhook-id': event.id,
    'webhook-timestamp': String(t),
    'webhook-signature': standardSignatureHeader([options.secret], event.id, t, body),
  };
  let outcome: string;
  let accepted = false;
  try {
    const response = await fetch(options.forwardTo, {
      method: 'POST',
      headers,
      body,
      redirect: 'manual',
      signal: AbortSignal.any([options.signal, AbortSignal.timeout(FORWARD_TIMEOUT_MS)]),
    });
    await response.arrayBuffer();
    accepted = response.status >= 200 && response.status < 300;
    outcome = `[${response.status}]`;
  } catch (error) {
    outcome = `[failed: ${options.signal.aborted ? 'stopped' : reason(error)}]`;
  }
  const at = new Date().toISOString().replace('T', ' ').slice(0, 19);
  return {
    accepted,
    line: `${at}  ${event.event}  ${event.id}  --> ${options.forwardTo} ${outcome} ${Date.now() - started} ms`,
  };
}

interface EventPage {
  data: Envelope[];
  has_more: boolean;
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

  page(o: { after?: string; since?: Date; events?: string }): Promise<EventPage> {
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

  private async get(query: string): Promise<EventPage> {
    const response = await fetch(`${this.base.replace(/\/$/, '')}/v1/events?${query}`, {
      headers: { authorization: `Bearer ${this.key}` },
      redirect: 'manual',
      signal: AbortSignal.any([this.signal, AbortSignal.timeout(FORWARD_TIMEOUT_MS)]),
    });
    const text = await response.text();
    if (response.status >= 200 && response.status < 300) return pageOf(text, this.base);
    const message = messageOf(text);
    // A refusal that waiting will not change ends the listener; overload and rate limits are waited out.
    if (response.status === 429 || response.status >= 500) throw new Error(`${response.status} ${message}`);
    throw new ListenRefusal(`The Events API refused: ${message} (${response.status})`);
  }
}

/** A page of the Events API, or a refusal: a 2xx that is not one means the address is not this service's API. */
function pageOf(text: string, base: string): EventPage {
  let page: unknown;
  try {
    page = parseJsonText(text);
  } catch {
    page = undefined;
  }
  const data = (page as { data?: unknown } | undefined)?.data;
  if (!Array.isArray(data) || typeof (page as { has_more?: unknown }).has_more !== 'boolean')
    throw new ListenRefusal(`${base} did not answer as the visa-crm API does (GET /v1/events); check --api-url.`);
  return page as EventPage;
}

/** The Error body's message, with the fields it names (`types: names no event kind: lead.foo`). */
function messageOf(text: string): string {
  try {
    const body = JSON.parse(text) as { message?: unknown; fields?: unknown };
    if (typeof body.message !== 'string') return text.slice(0, 200);
    const fields = body.fields && typeof body.fields === 'object' ? Object.entries(body.fields) : [];
    if (fields.length === 0) return body.message;
    return `${body.message}: ${fields.map(([name, problem]) => `${name}: ${String(problem)}`).join('; ')}`;
  } catch {
    return text.slice(0, 200);
  }
}

function reason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } }).cause;
  if (cause && typeof cause.code === 'string') return cause.code;
  if (error instanceof Error && error.name === 'TimeoutError') return 'no answer within 10 s';
  return error instanceof Error ? error.message : String(error);
}

async function pause(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch {
    // Aborted: the loop ends at its next check.
  }
}
