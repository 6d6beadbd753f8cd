import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import fc from 'fast-check';
import Fastify from 'fastify';
import type { AppServices } from '../../src/bootstrap.js';
import { registerConsole } from '../../src/console/plugin.js';
import { SchemaCompilations } from '../../src/http/schema-compilation.js';
import type { RawAnswer } from '../support/raw-http.js';
import { uploadFile, type PageForm } from './crawl.js';

/**
 * The bodies a browser or a script can send a console route, well-formed and malformed, as exact bytes; the console's
 * route table; and the rules every answer to them keeps (test/console/fuzz.test.ts).
 */

/** A method and path the console registers, as its route table has it (`/console/w/:slug/…`). */
export interface ConsoleRoute {
  method: string;
  url: string;
}

/** Every method of every console route, read from the routes the console plugin registers (HEAD ones included). */
export async function consoleRoutes(services: AppServices): Promise<ConsoleRoute[]> {
  const app = Fastify().withTypeProvider<TypeBoxTypeProvider>();
  // What the service's app gives the console besides its routes: the schemas compiled on first use.
  app.decorate('schemaCompilations', new SchemaCompilations());
  const routes = new Map<string, ConsoleRoute>();
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.set(`${method} ${route.url}`, { method, url: route.url });
  });
  await registerConsole(app, services);
  await app.ready();
  await app.close();
  return [...routes.values()];
}

const UUID_PARAM = /^(id|\w+Id)$/;

/** The route's path pattern: each `:param` one segment. */
export const routePattern = (url: string) =>
  new RegExp(`^${url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:\w+/g, '[^/]+')}$`);

/** A path for the route with made-up values: the workspace's slug, an id naming nothing, a token that is none. */
export function madeUpPath(url: string, slug: string): string {
  return url.replace(/:(\w+)/g, (_match, name: string) => {
    if (name === 'slug') return slug;
    if (UUID_PARAM.test(name)) return '0190f7a6-0000-7000-8000-00000000c0de';
    return name === 'token' ? 'no-such-token-0123456789' : 'x';
  });
}

/** What goes on the wire for one kind of body: its Content-Type (none when undefined) and bytes (none when undefined). */
export interface Encoded {
  contentType?: string;
  body?: Buffer;
}

/** A way of sending a form's fields: a content type and an encoding, well-formed or not. */
export interface ContentKind {
  name: string;
  /** A multipart body: its CSRF token goes in the action's query, as the console's upload form sends it. */
  multipart: boolean;
  encode: (pairs: [string, string][], form: PageForm | undefined) => Encoded;
}

const BOUNDARY = '----console-fuzz-7MA4YWxkTrZu0gW';
/** Just over the console's 64 KiB limit for urlencoded and JSON bodies. */
const HUGE = 70_000;

const urlencoded = (pairs: [string, string][]) => new URLSearchParams(pairs).toString();
const jsonText = (pairs: [string, string][]) => JSON.stringify(Object.fromEntries(pairs));
/** What a browser sends for `enctype="text/plain"`: a line per field. */
const plainText = (pairs: [string, string][]) => pairs.map(([k, v]) => `${k}=${v}\r\n`).join('');

/** A multipart/form-data body of these fields, and a small file (a PDF, or a CSV for the import) per file input. */
export function multipartBody(pairs: [string, string][], form: PageForm | undefined, boundary = BOUNDARY): Buffer {
  const parts: Buffer[] = pairs.map(([name, value]) =>
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`),
  );
  const upload = uploadFile(form?.action ?? '');
  for (const file of form?.fields.filter((f) => f.type === 'file') ?? [])
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${file.name}"; filename="fuzz-${upload.name}"\r\n` +
          `Content-Type: ${upload.type}\r\n\r\n`,
      ),
      upload.bytes,
      Buffer.from('\r\n'),
    );
  return Buffer.concat([...parts, Buffer.from(`--${boundary}--\r\n`)]);
}

// Named for fast-check too: a counterexample shows the kind's name, not its encoder's source.
const kind = (name: string, encode: ContentKind['encode'], multipart = false): ContentKind =>
  Object.assign({ name, multipart, encode }, { [fc.toStringMethod]: () => name });

/** The bodies a browser's form or a script sends, each well-formed. */
export const WELL_FORMED: ContentKind[] = [
  kind('urlencoded', (pairs) => ({
    contentType: 'application/x-www-form-urlencoded',
    body: Buffer.from(urlencoded(pairs)),
  })),
  kind(
    'multipart',
    (pairs, form) => ({
      contentType: `multipart/form-data; boundary=${BOUNDARY}`,
      body: multipartBody(pairs, form),
    }),
    true,
  ),
  kind('json', (pairs) => ({ contentType: 'application/json', body: Buffer.from(jsonText(pairs)) })),
  kind('text/plain', (pairs) => ({ contentType: 'text/plain', body: Buffer.from(plainText(pairs)) })),
  kind('no body, no type', () => ({})),
];

/** A malformed body of each of those types: cut short, mis-framed, mis-encoded, in a charset said wrongly, too big. */
export const MALFORMED: ContentKind[] = [
  kind('truncated JSON', (pairs) => {
    const text = jsonText(pairs);
    return { contentType: 'application/json', body: Buffer.from(text.slice(0, Math.max(1, text.length >> 1))) };
  }),
  kind(
    'multipart, boundary not the one said',
    (pairs, form) => ({
      contentType: 'multipart/form-data; boundary=not-the-boundary-used',
      body: multipartBody(pairs, form),
    }),
    true,
  ),
  kind(
    'multipart, no boundary',
    (pairs, form) => ({ contentType: 'multipart/form-data', body: multipartBody(pairs, form) }),
    true,
  ),
  kind(
    'multipart, cut before its end',
    (pairs, form) => {
      const body = multipartBody(pairs, form);
      return { contentType: `multipart/form-data; boundary=${BOUNDARY}`, body: body.subarray(0, body.length - 12) };
    },
    true,
  ),
  kind('urlencoded, invalid percent-encoding', (pairs) => ({
    contentType: 'application/x-www-form-urlencoded',
    body: Buffer.from(`${urlencoded(pairs)}&%zz=%E0%A4&bad%=%%&%FF=%C0%AF`),
  })),
  kind('urlencoded, bytes that are not UTF-8', (pairs) => ({
    contentType: 'application/x-www-form-urlencoded',
    body: Buffer.concat([Buffer.from(urlencoded(pairs)), Buffer.from([0x26, 0x6e, 0x3d, 0xff, 0xfe, 0xc0, 0xaf])]),
  })),
  kind('urlencoded, in UTF-16', (pairs) => ({
    contentType: 'application/x-www-form-urlencoded; charset=utf-16le',
    body: Buffer.from(urlencoded(pairs), 'utf16le'),
  })),
  kind('JSON, said to be Latin-1', (pairs) => ({
    contentType: 'application/json; charset=iso-8859-1',
    body: Buffer.from(jsonText([...pairs, ['note', 'café']]), 'latin1'),
  })),
  kind('text/plain, said to be Latin-1', (pairs) => ({
    contentType: 'text/plain; charset=iso-8859-1',
    body: Buffer.from(plainText([...pairs, ['note', 'café']]), 'latin1'),
  })),
  kind('a body without a type', (pairs) => ({ body: Buffer.from(urlencoded(pairs)) })),
  kind('urlencoded, huge', (pairs) => ({
    contentType: 'application/x-www-form-urlencoded',
    body: Buffer.from(`${urlencoded(pairs)}&note=${'x'.repeat(HUGE)}`),
  })),
  kind('JSON, huge', (pairs) => ({
    contentType: 'application/json',
    body: Buffer.from(jsonText([...pairs, ['note', 'x'.repeat(HUGE)]])),
  })),
  kind(
    'multipart, huge',
    (pairs, form) => ({
      contentType: `multipart/form-data; boundary=${BOUNDARY}`,
      body: multipartBody([...pairs, ['note', 'x'.repeat(HUGE)]], form),
    }),
    true,
  ),
];

/** A request as exact bytes: the console's own Host and Origin, the session's cookie if any, this body. */
export function requestBytes(
  baseUrl: string,
  request: { method: string; target: string; cookie?: string; origin?: string | null; encoded: Encoded },
): Buffer {
  const { host } = new URL(baseUrl);
  const headers = [`${request.method} ${request.target} HTTP/1.1`, `Host: ${host}`, 'Connection: close'];
  const origin = request.origin === undefined ? baseUrl : request.origin;
  if (origin !== null) headers.push(`Origin: ${origin}`);
  if (request.cookie) headers.push(`Cookie: ${request.cookie}`);
  const { contentType, body } = request.encoded;
  if (contentType !== undefined) headers.push(`Content-Type: ${contentType}`);
  if (body !== undefined) headers.push(`Content-Length: ${body.length}`);
  return Buffer.concat([Buffer.from(`${headers.join('\r\n')}\r\n\r\n`), body ?? Buffer.alloc(0)]);
}

/** Whether a Content-Type names JSON, as the console reads it: a script's request, answered in JSON. */
export const namesJson = (contentType: string | undefined) =>
  contentType !== undefined && contentType.split(';')[0]!.trim().toLowerCase() === 'application/json';

const ERROR_KEYS = new Set(['error', 'message', 'fields', 'scope', 'retry_after', 'required', 'request_id']);

/** Why an answer is not the spec's Error body (src/http/schemas/error.ts), or undefined when it is one. */
export function errorShapeProblem(answer: RawAnswer): string | undefined {
  if (!/^application\/json\b/.test(answer.headers['content-type'] ?? '')) return 'not application/json';
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(answer.body) as Record<string, unknown>;
  } catch {
    return 'not JSON';
  }
  if (typeof body.error !== 'string' || !/^[a-z][a-z0-9_]*$/.test(body.error)) return 'no snake_case error code';
  if (typeof body.message !== 'string' || body.message === '') return 'no message';
  if (typeof body.request_id !== 'string' || body.request_id !== answer.headers['request-id'])
    return 'no request_id, or not the Request-Id header';
  const extra = Object.keys(body).filter((key) => !ERROR_KEYS.has(key));
  if (extra.length > 0) return `keys the Error shape has not: ${extra.join(', ')}`;
  const fields = body.fields;
  if (fields !== undefined && (typeof fields !== 'object' || fields === null || Array.isArray(fields)))
    return 'fields is not a map';
  if (fields && Object.values(fields).some((v) => typeof v !== 'string')) return 'a field’s problem is not text';
  return undefined;
}

/** Why an answer is not one of the console's pages, or undefined when it is one. */
export function pageProblem(answer: RawAnswer): string | undefined {
  if (!/^text\/html\b/.test(answer.headers['content-type'] ?? '')) return 'not text/html';
  if (!/^<!doctype html>/i.test(answer.body.trimStart())) return 'no doctype';
  if (!/<title>[^<]+<\/title>/.test(answer.body) || !/<\/html>\s*$/.test(answer.body)) return 'not a whole page';
  return undefined;
}

/**
 * The rule every answer keeps: below 500 and, when it refuses, well-formed: a page, or where the console answers JSON
 * (only to a request sent as JSON: a script's) the spec's Error body. Undefined when kept, else what broke it.
 */
export function answerProblem(method: string, contentType: string | undefined, answer: RawAnswer): string | undefined {
  if (!(answer.status >= 200 && answer.status < 500)) return `answered ${answer.status}`;
  if (answer.status < 400 || method === 'HEAD') return undefined;
  const json = /^application\/json\b/.test(answer.headers['content-type'] ?? '');
  if (json && !namesJson(contentType)) return `a ${answer.status} refusal in JSON to a form`;
  const problem = json ? errorShapeProblem(answer) : pageProblem(answer);
  return problem && `a ${answer.status} refusal: ${problem}`;
}
