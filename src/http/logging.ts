import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Bindings, DestinationStream, LoggerOptions } from 'pino';
import { KEY_PREFIX } from '../keys/api-key.js';
import { SECRET_PREFIX } from '../webhooks/signing.js';

/**
 * What the service writes to its log, and the rules that keep keys, secrets and personal data out of it:
 *
 * 1. Request lines name the method, a path whose segments are kept only when they look like route words or ids
 *    (lowercase letters, digits, `.`, `_`, `-`), the client address, and from the query string only the values of
 *    parameters on an allow-list; every other parameter's value, and every name that is not plain lowercase, is
 *    `[redacted]`. So repeated, percent-encoded (`%6Bey=`), mixed-case or bracketed (`key[]=`) spellings of `key` are
 *    redacted without being guessed. No header and no body is logged.
 * 2. Errors are serialised from an allow-list of fields: a PostgreSQL error keeps its code, severity, constraint,
 *    table, column, schema, data type and routine, and loses `detail`, `where`, `hint`, `internalQuery` and anything
 *    else (they carry row values: phones, emails); quoted values in its message are redacted too. Other errors keep
 *    type, message, stack and a few plain fields (`code`, `statusCode`, `errno`, `syscall`); never request bytes
 *    (Node's parser errors carry the raw request, Authorization header included, as `rawPacket`).
 * 3. Every line, whatever wrote it, passes `scrubSecrets` before it reaches the stream: anything of the form of an API
 *    key or a webhook secret, also percent-encoded (any number of times) or base64-encoded, becomes `[redacted]`.
 */

export const REDACTED = '[redacted]';

/** Query parameters whose values may be logged: they are never keys or secrets (see the route schemas). */
const LOGGED_QUERY_PARAMETERS = new Set(['limit', 'cursor', 'updated_since', 'sandbox']);
const SAFE_QUERY_VALUE = /^[A-Za-z0-9._:+-]{0,200}$/;
const PLAIN_PARAMETER_NAME = /^[a-z_]{1,40}$/;
const SAFE_PATH_SEGMENT = /^[a-z0-9][a-z0-9._-]{0,79}$/;

// --- scrubbing key and secret forms out of text ---

/** A regex source matching the character `c` as itself or percent-encoded any number of times (`k`, `%6B`, `%256b`). */
function charOrEncoded(c: string): string {
  const hex = c.charCodeAt(0).toString(16).padStart(2, '0');
  const hexPattern = [...hex].map((h) => (/[a-f]/.test(h) ? `[${h}${h.toUpperCase()}]` : h)).join('');
  const literal = /[A-Za-z]/.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c.replace(/[^A-Za-z0-9]/g, '\\$&');
  return `(?:${literal}|%(?:25)*${hexPattern})`;
}

const word = (text: string) => [...text].map(charOrEncoded).join('');
/** A letter or digit, plain or percent-encoded (the encoded ranges are a little wider than letters and digits). */
const ALNUM = '(?:[A-Za-z0-9]|%(?:25)*(?:3[0-9]|[46][0-9A-Fa-f]|[57][0-9Aa]))';
/** Base64 (and base64url) text, plain or with its `+`, `/` and `=` percent-encoded. */
const B64 = '(?:[A-Za-z0-9+/_-]|%(?:25)*(?:2[bBfF]|3[dD]))';

/** The characters of base64(x + prefix + …) that depend on the prefix alone, for each of the three alignments. */
function base64Anchors(prefix: string): string[] {
  const anchors = new Set<string>();
  const bytes = Buffer.from(prefix, 'latin1');
  for (const lead of [0, 1, 2]) {
    const encoded = Buffer.concat([Buffer.alloc(lead), bytes, Buffer.alloc(3)]).toString('base64');
    const first = Math.ceil((lead * 8) / 6);
    const last = Math.floor(((lead + bytes.length) * 8) / 6);
    const stable = encoded.slice(first, last);
    anchors.add(stable);
    anchors.add(stable.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return [...anchors].filter((a) => a.length >= 6);
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

const PLAIN_FORMS = [
  // An API key (also shortened: anything after its fixed head is key material), plain or percent-encoded.
  `${word(`${KEY_PREFIX}_`)}(?:${word('live')}|${word('test')})${word('_')}(?:${word('pub_')})?${ALNUM}{4,}`,
  // A webhook secret, plain or percent-encoded.
  `${word(SECRET_PREFIX)}${B64}{4,}`,
];
const BASE64_FORMS = [`${KEY_PREFIX}_live_`, `${KEY_PREFIX}_test_`, SECRET_PREFIX]
  .flatMap(base64Anchors)
  .map((anchor) => `${B64}{0,3}${escapeRegex(anchor)}${B64}{8,}`);
const SECRET_FORMS = new RegExp([...PLAIN_FORMS, ...BASE64_FORMS].join('|'), 'g');
/**
 * A cheap first look, far cheaper than SECRET_FORMS: a line with none of these has nothing to scrub. Every form
 * above contains one: a key's or secret's head, a percent escape, or a base64 anchor.
 */
const CANDIDATE = new RegExp(
  [
    `${KEY_PREFIX}_(?:live|test)`,
    SECRET_PREFIX.slice(0, -1),
    '%',
    ...[`${KEY_PREFIX}_live_`, `${KEY_PREFIX}_test_`, SECRET_PREFIX].flatMap(base64Anchors).map(escapeRegex),
  ].join('|'),
  'i',
);

/** A run of URL characters holding at least one percent escape. */
const ENCODED_RUN = /[A-Za-z0-9%._~+-]*%[0-9A-Fa-f]{2}[A-Za-z0-9%._~+-]*/g;

/** Percent-decodes a run again and again (the escapes themselves may be escaped) and asks whether a secret is inside. */
function decodesToSecret(run: string): boolean {
  let text = run;
  for (let i = 0; i < 6 && text.includes('%'); i++) {
    const next = text.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (next === text) break;
    text = next;
    SECRET_FORMS.lastIndex = 0;
    if (SECRET_FORMS.test(text)) return true;
  }
  return false;
}

/** Replaces everything in `text` that has the form of an API key or a webhook secret (plain, percent-encoded, base64). */
export function scrubSecrets(text: string): string {
  if (!CANDIDATE.test(text)) return text;
  const scrubbed = text.replace(SECRET_FORMS, REDACTED);
  return scrubbed.includes('%')
    ? scrubbed.replace(ENCODED_RUN, (run) => (decodesToSecret(run) ? REDACTED : run))
    : scrubbed;
}

// --- request lines ---

function decoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/** The path with every segment that is not a plain route word or id redacted, and the allow-listed query values. */
export function loggableUrl(url: string): string {
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  const safePath = path
    .split('/')
    .map((segment) => (segment === '' || SAFE_PATH_SEGMENT.test(segment) ? segment : REDACTED))
    .join('/');
  if (queryAt === -1) return scrubSecrets(safePath);
  const pairs = url
    .slice(queryAt + 1)
    .split('&')
    .filter((pair) => pair !== '')
    .map((pair) => {
      const equals = pair.indexOf('=');
      const name = equals === -1 ? pair : pair.slice(0, equals);
      if (!PLAIN_PARAMETER_NAME.test(name)) return REDACTED;
      if (equals === -1) return name;
      const value = decoded(pair.slice(equals + 1));
      const shown =
        LOGGED_QUERY_PARAMETERS.has(name) && value !== undefined && SAFE_QUERY_VALUE.test(value) ? value : REDACTED;
      return `${name}=${shown}`;
    });
  return scrubSecrets(`${safePath}?${pairs.join('&')}`);
}

// --- errors ---

const PLAIN_ERROR_FIELDS = ['code', 'statusCode', 'errno', 'syscall'] as const;
const POSTGRES_ERROR_FIELDS = ['severity', 'constraint', 'table', 'column', 'schema', 'dataType', 'routine'] as const;
/** Words after which PostgreSQL quotes an identifier (kept) rather than a value (redacted). */
const IDENTIFIER_WORDS =
  /(?:constraint|relation|column|table|index|schema|database|function|procedure|type|sequence|role|trigger|view|extension|operator|cursor|statement|savepoint|channel|domain|collation|publication|subscription|tablespace|parameter|of)\s$/i;

type ErrorLike = Error & Record<string, unknown>;

function isPostgresError(error: ErrorLike): boolean {
  return typeof error.severity === 'string' && typeof error.code === 'string' && /^[0-9A-Z]{5}$/.test(error.code);
}

/** A PostgreSQL message without the values it quotes: `invalid input syntax for type uuid: "…"` keeps the type. */
export function withoutQuotedValues(message: string): string {
  return message.replace(/"(?:[^"]|"")*"|'(?:[^']|'')*'/g, (quoted, offset: number) =>
    IDENTIFIER_WORDS.test(message.slice(Math.max(0, offset - 20), offset)) ? quoted : `"${REDACTED}"`,
  );
}

/** pino's `err` serialiser: an allow-list of fields, never row values or request bytes. */
export function serializeError(value: unknown, depth = 0): unknown {
  if (!(value instanceof Error)) {
    return typeof value === 'string' ? scrubSecrets(value) : value === undefined ? undefined : String(value);
  }
  const error = value as ErrorLike;
  const postgres = isPostgresError(error);
  const clean = (text: string) => scrubSecrets(postgres ? withoutQuotedValues(text) : text);
  const out: Record<string, unknown> = {
    type: error.constructor?.name ?? error.name,
    message: clean(error.message),
  };
  if (typeof error.stack === 'string') out.stack = clean(error.stack);
  for (const field of postgres ? [...PLAIN_ERROR_FIELDS, ...POSTGRES_ERROR_FIELDS] : PLAIN_ERROR_FIELDS) {
    const v = error[field];
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[field] = v;
  }
  if (depth < 4) {
    if (error.cause !== undefined) out.cause = serializeError(error.cause, depth + 1);
    if (error instanceof AggregateError)
      out.errors = (error.errors as unknown[]).slice(0, 10).map((e) => serializeError(e, depth + 1));
  }
  return out;
}

// --- request lines ---

/**
 * One line per request at `info`, written when its answer has gone: the request (method, URL, address: the `req`
 * serialiser), the status, the time taken, the request id and, once authenticated, the tenant and key
 * (`bindRequestLog`). fastify's "incoming request" line is written at `debug`: at `info` a second line per request
 * doubled what logging cost a request.
 */
export class RequestLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (!this.isLogDisabled(request)) request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    const line = { req: request, res: reply, responseTime: reply.elapsedTime };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}

/**
 * Adds fields to every later line of one request. fastify gives each request a child logger of its own (the request
 * and its reply share it), so it gets the bindings rather than a second child; a logger without bindings (fastify's
 * null logger, when logging is off) is left alone.
 */
export function bindRequestLog(log: FastifyBaseLogger, bindings: Bindings): void {
  (log as FastifyBaseLogger & { setBindings?: (bindings: Bindings) => void }).setBindings?.(bindings);
}

// --- the options ---

interface LoggableRequest {
  method: string;
  url: string;
  ip?: string;
}

export type ServiceLoggerOptions = LoggerOptions & { stream?: DestinationStream };

/**
 * Pino options for the API and its workers: request ids, and never a key, secret or row value in a log line. Give a
 * `stream` to write somewhere other than stdout (fastify passes it to pino).
 */
export function loggerOptions(level: string, stream?: DestinationStream): ServiceLoggerOptions {
  return {
    level,
    redact: {
      // Nothing logs these today; should someone log an object holding one, it still stays out.
      paths: ['*.authorization', '*.cookie', '*["x-api-key"]', '*.secret', '*.captcha_token', '*.key'],
      censor: REDACTED,
    },
    serializers: {
      req: (req: LoggableRequest) => ({ method: req.method, url: loggableUrl(req.url), ip: req.ip }),
      err: serializeError,
    },
    hooks: { streamWrite: scrubSecrets },
    ...(stream ? { stream } : {}),
  };
}
