import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyBodyParser, FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError, newRequestId, type ErrorExtras } from './errors.js';
import { parseJsonText } from '../shared/json-text.js';

/**
 * What happens on the wire before a route: the JSON body parser, and the answers Node's HTTP server gives on its own
 * (parser refusals, unmet expectations), all in the spec's Error shape with a request id.
 */

/** The Error body, and its headers, for an answer written without a fastify request. */
function errorAnswer(status: number, code: string, message: string, extras: ErrorExtras = {}) {
  const requestId = newRequestId();
  const body = JSON.stringify({ error: code, message, ...extras, request_id: requestId });
  const headers = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    'request-id': requestId,
    connection: 'close',
  };
  return { requestId, body, headers };
}

/** A complete HTTP/1.1 answer as bytes, for a socket no response object is attached to. */
export function rawErrorResponse(status: number, code: string, message: string, extras: ErrorExtras = {}) {
  const { requestId, body, headers } = errorAnswer(status, code, message, extras);
  const head = Object.entries({ ...headers, date: new Date().toUTCString() })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return { requestId, bytes: `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n${head}\r\n${body}` };
}

/** Node's `clientError` error (fastify's `ConnectionError` types `rawPacket` as JSON; it is a Buffer). */
interface ClientError extends Error {
  code?: string;
  rawPacket?: unknown;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// A byte no header value may hold (RFC 9110 field-value: visible characters, space, tab and obs-text).
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const BAD_VALUE_BYTE = /[\x00-\x08\x0a-\x1f\x7f]/;

/** The header whose value holds a control character (a NUL, say), read from the bytes the parser refused. */
function headerWithBadValue(raw: unknown): string | undefined {
  if (!Buffer.isBuffer(raw)) return undefined;
  const lines = raw.toString('latin1').split('\r\n').slice(1);
  for (const line of lines) {
    if (line === '') break;
    const colon = line.indexOf(':');
    const name = line.slice(0, Math.max(colon, 0)).trim();
    if (TOKEN.test(name) && BAD_VALUE_BYTE.test(line.slice(colon + 1))) return name.toLowerCase();
  }
  return undefined;
}

/** Status, code, message and extras for what Node's HTTP parser refused. */
function clientErrorAnswer(error: ClientError): [number, string, string, ErrorExtras?] {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return [431, 'headers_too_large', 'The request line and headers are larger than the 16 KB this service reads'];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'request_timeout', 'The request did not arrive in time'];
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return [413, 'payload_too_large', 'The chunk extensions of the body are too large'];
    case 'HPE_INVALID_HEADER_TOKEN': {
      const header = headerWithBadValue(error.rawPacket);
      if (header)
        return [
          400,
          'validation_failed',
          'Some fields are invalid; see fields',
          { fields: { [header]: 'contains a control character (a NUL, for example), which is not allowed' } },
        ];
      return [400, 'invalid_request', 'A header name or value holds a character that is not allowed'];
    }
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return [400, 'invalid_request', 'Content-Length is sent more than once; send it once'];
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_INVALID_TRANSFER_ENCODING':
      return [
        400,
        'invalid_request',
        'The body framing is not valid: send one Content-Length of digits, or Transfer-Encoding: chunked, never both',
      ];
    case 'HPE_INVALID_CHUNK_SIZE':
      return [400, 'invalid_request', 'The chunked body is malformed'];
    case 'HPE_INVALID_METHOD':
      return [400, 'invalid_request', 'The request method is not valid'];
    case 'HPE_INVALID_URL':
      return [400, 'invalid_request', 'The request URL holds characters that are not allowed'];
    case 'HPE_INVALID_VERSION':
      return [400, 'invalid_request', 'The request line is not valid; send METHOD /path HTTP/1.1 and CRLF line ends'];
    default:
      return [400, 'invalid_request', 'The request is not valid HTTP/1.1'];
  }
}

/**
 * fastify's `clientErrorHandler`: Node's HTTP parser refused the bytes (oversized headers, a duplicate
 * Content-Length, a bad chunk, a control character in a header, ...). There is no request object, so the answer is
 * written to the socket as it is, with a fresh request id (also in the log line), and the connection is closed: what
 * follows on it cannot be read reliably. As Node does, nothing is written once an answer on this socket has begun.
 */
export function answerClientError(log: FastifyBaseLogger, error: ClientError, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message, extras] = clientErrorAnswer(error);
  const { requestId, bytes } = rawErrorResponse(status, code, message, extras);
  log.info({ request_id: requestId, status, code, parser_error: error.code }, 'request refused by the HTTP parser');
  // `_httpMessage` is the answer in progress on this socket, as Node's own handler reads it.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) socket.write(bytes);
  socket.destroy(error);
}

/** An `Expect` header other than `100-continue` (which Node handles): 417 in the Error shape, not Node's empty one. */
export function answerExpectation(_request: IncomingMessage, response: ServerResponse): void {
  const { body, headers } = errorAnswer(
    417,
    'expectation_failed',
    'The Expect header can only be 100-continue; send the request without it',
  );
  response.writeHead(417, headers).end(body);
}

// The WHATWG labels of UTF-8 that clients send.
const UTF8_LABELS = new Set(['utf-8', 'utf8', 'unicode-1-1-utf-8']);

/** The charset parameter of a Content-Type, lower-cased and unquoted, or undefined. */
function charsetOf(contentType: string | undefined): string | undefined {
  for (const parameter of (contentType ?? '').split(';').slice(1)) {
    const eq = parameter.indexOf('=');
    if (eq < 0 || parameter.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    return parameter
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
  }
  return undefined;
}

const isIdentity = (encoding: string) =>
  encoding.split(',').every((token) => ['', 'identity'].includes(token.trim().toLowerCase()));

/**
 * The only body parser (application/json; fastify's text/plain parser is not registered, so any other type is 415).
 * Refuses a Content-Encoding other than identity and a charset other than UTF-8 with 415, and bytes that are not
 * UTF-8 with 400 `invalid_json` (rather than reading them as U+FFFD). An empty body is no body for a route that takes
 * none (a DELETE sent with `Content-Type: application/json`); for a route that takes one it is `invalid_json`.
 */
export function jsonBodyParser(parseText: FastifyBodyParser<string>): FastifyBodyParser<Buffer> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  return (request: FastifyRequest, body: Buffer, done) => {
    if (body.length === 0 && request.routeOptions.schema?.body === undefined) return done(null, undefined);
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && !isIdentity(encoding))
      return done(
        new ApiError(
          415,
          'unsupported_media_type',
          'A Content-Encoding (gzip, for example) is not supported; send the body uncompressed',
        ),
        undefined,
      );
    const charset = charsetOf(request.headers['content-type']);
    if (charset !== undefined && !UTF8_LABELS.has(charset))
      return done(
        new ApiError(
          415,
          'unsupported_media_type',
          'Send the body as UTF-8 JSON: Content-Type: application/json, with charset=utf-8 or no charset',
        ),
        undefined,
      );
    if (body.length === 0)
      return done(new ApiError(400, 'invalid_json', 'The body is empty; send a JSON object'), undefined);
    let text: string;
    try {
      text = decoder.decode(body);
    } catch {
      return done(new ApiError(400, 'invalid_json', 'The body is not valid UTF-8'), undefined);
    }
    if (!text.includes('\\')) return parseText(request, text, done);
    // fastify's parser checks the text (syntax, __proto__ and constructor.prototype refused); the value is then read
    // again by parseJsonText, which reads escaped keys right where Node 24's JSON.parse may not (src/shared/json-text.ts).
    return parseText(request, text, (error, value) => (error ? done(error, value) : done(null, parseJsonText(text))));
  };
}

/**
 * At close, ends the connections that have not sent a byte (browsers open one ahead of their next request): Node counts
 * them busy, so the close waited out their headers timeout, past the 30 s a stop is given (Ctrl-C then exited 1).
 */
export function closeUnusedConnections(app: FastifyInstance): void {
  const open = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  app.addHook('preClose', async () => {
    for (const socket of open) if (socket.bytesRead === 0) socket.destroy();
  });
}
