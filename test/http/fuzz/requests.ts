import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { badText, goodText } from '../../support/properties.js';
import { EVENT_KINDS } from '../../../src/shared/enums.js';
import { LeadCreate, LeadListQuery, LeadPatchBody } from '../../../src/schemas/lead.js';

/**
 * Malformed requests for the fuzz suite (test/http/fuzz.test.ts): arbitraries for bodies, query strings, path ids and
 * headers of the ten public endpoints, each giving the exact bytes to put on the wire.
 */

/** A request as bytes on the wire: sent over a raw socket so the Node HTTP parser sees exactly this. */
export interface FuzzRequest {
  method: string;
  /** The request target as sent (already percent-encoded, or deliberately not). */
  target: string;
  headers: [string, string | Buffer][];
  body: Buffer | undefined;
  /** How the body travels: with a Content-Length (the usual), chunked, or with a protocol fault. */
  framing: 'length' | 'chunked' | 'bad-chunk' | 'two-lengths';
  /** Path ids of the second workspace this request names (a 2xx would cross tenants). */
  foreign: boolean;
}

/** What the arbitraries draw from: the first workspace's keys and ids (fuzzed), the second's ids (must stay unseen). */
export interface FuzzTargets {
  secretLive: string;
  secretTest: string;
  publicLive: string;
  allowedOrigin: string;
  leadIds: string[];
  applicationIds: string[];
  foreignLeadIds: string[];
  foreignApplicationIds: string[];
  foreignWebhookIds: () => string[];
  /** `next_cursor` values of lists: the first workspace's (valid here) and the second's (refused here). */
  cursors: string[];
  foreignCursors: string[];
}

/** A piece of JSON text put into a body as is: numbers JSON reads as infinite, deep nesting, escapes. */
class RawJson {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** JSON text of a value that may hold RawJson fragments anywhere. */
export function toJson(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${toJson(v)}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

const rawFragment = fc.oneof(
  fc.constantFrom('1e309', '-1e309', '1e-400', '123456789012345678901234567890', '-0', '0.1e1', '1E2'),
  fc.constantFrom('"\\u0000"', '"\\ud800"', '"a\\udfffb"', '"\\u0000\\ud83d"', '"\\ud83d\\ude00"', '"\\/"'),
  fc.integer({ min: 1, max: 5000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
  fc.integer({ min: 1, max: 3000 }).map((n) => '{"a":'.repeat(n) + '1' + '}'.repeat(n)),
);

const hugeText = fc.integer({ min: 121, max: 70_000 }).map((n) => 'x'.repeat(n));

/** Values a field should not hold (and a few it may): wrong types, odd strings, numbers at the edges, nesting. */
export const weirdValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(null, true, false, 0, -1, 1.5, 2 ** 53, -(2 ** 31), '', ' ', '0', 'true', 'null'),
    fc.double(),
    fc.integer(),
    goodText(40),
    badText(40),
    hugeText,
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.constantFrom('2026-13-45', '0000-01-01', '9999-12-31T23:59:60Z', 'yesterday', '2026-02-29', '1e3', 'NaN'),
    rawFragment.map((text) => new RawJson(text)),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom('a', 'key', '', 'value', 'x y'), tie('value'), { maxKeys: 3 }),
  ),
})).value;

// The bodies' and the list's field names come from the schemas the routes validate with, so a field added to one is
// fuzzed without this file changing.
const LEAD_FIELDS = Object.keys(LeadCreate.properties);
const NESTED = ['english_test.overall', 'english_test.test_date', 'utm.source', 'custom_fields.budget_lakhs'];
const PATCH_FIELDS = Object.keys(LeadPatchBody.properties);
const LIST_PARAMS = Object.keys(LeadListQuery.properties);
const WEBHOOK_FIELDS = ['url', 'description', 'events'];
/** Names no schema knows (and JavaScript's own property names); none spells an internal word the leak check looks for. */
const UNKNOWN_FIELDS = [
  'extra',
  'Full_Name',
  'constructor',
  'prototype',
  'toString',
  '',
  'a.b',
  'x\u0000y',
  '\ud800',
  'id',
];

/** A path in an object given as dotted names; intermediate objects are made as needed. */
function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts[parts.length - 1]!] = value;
}

/**
 * Values a field may well hold, and near misses, so the rules behind the schema (phone and email forms, duplicates,
 * stage moves, lost reasons, owners, custom fields, webhook events) are reached, not only the schema's refusals.
 */
const PLAUSIBLE: Record<string, fc.Arbitrary<unknown>> = {
  full_name: fc.constantFrom('A', 'Ä Ö', ' Priya ', '漢字', 'x'.repeat(120)),
  phone: fc.constantFrom('+91 98765 43210', '098765 43210', '9876543210', '+1 (415) 555-0100', '12', '+', '٩٨٧٦٥٤٣٢١٠'),
  alt_phone: fc.constantFrom('+91 98765 43211', '', null, 'abc'),
  // Repeated addresses make duplicates; the second workspace's first person must stay a stranger here.
  email: fc.constantFrom(
    'dup.person@example.com',
    `valid.${process.pid}.1@example.org`,
    'A@Example.COM',
    ' a@b.co ',
    'a@b',
    'a..b@example.com',
    '',
    null,
    'é@ü.example',
    'a@[127.0.0.1]',
  ),
  country_interest: fc.constantFrom('CA', 'ca', 'XX', 'IND', '', null),
  visa_type: fc.constantFrom('student', 'work', 'Student', null),
  intake: fc.constantFrom('2027-01', '2027-13', '1999-12', null),
  date_of_birth: fc.constantFrom('2000-02-29', '2001-02-29', '1900-01-01', '2999-01-01', '0001-01-01', null),
  highest_qualification: fc.constantFrom('bachelors', 'masters', 'phd', null),
  english_test: fc.constantFrom(
    { type: 'IELTS', overall: 7.5 },
    { type: 'PTE', overall: 65, test_date: '2026-01-01' },
    { type: 'IELTS', overall: 7, test_date: '2999-01-01' },
    { type: 'TOEFL', overall: -1 },
    { type: 'ielts', overall: 7 },
  ),
  score_percent: fc.constantFrom(0, 100, 100.0001, 55.5),
  work_experience_years: fc.constantFrom(0, 60, 61, 0.5),
  previous_refusals: fc.constantFrom(0, 20, 21, 1.0),
  utm: fc.constantFrom({ source: 'google' }, { source: 'x', medium: 'y', campaign: 'z', term: 't', content: 'c' }, {}),
  landing_page_url: fc.constantFrom('https://www.example.com/a?b=c', 'not a url', 'javascript:alert(1)', null),
  custom_fields: fc.constantFrom(
    { preferred_callback: 'morning', budget_lakhs: 12.5, has_offer_letter: true },
    { preferred_callback: 'night' },
    { budget_lakhs: '12' },
    { unknown_field: 1 },
    {},
  ),
  website: fc.constantFrom('', 'http://spam.example'),
  captcha_token: fc.constantFrom('token', ''),
  consent: fc.constantFrom(true, false, 'true', 1),
  stage_key: fc.constantFrom('new', 'contacted', 'qualified', 'lost', 'converted', 'unknown_stage', 'Lost'),
  lost_reason_key: fc.constantFrom('not_reachable', 'chose_competitor', 'unknown_reason', null),
  temperature: fc.constantFrom('hot', 'warm', 'cold', 'HOT', null),
  next_follow_up_at: fc.constantFrom('2026-12-01T10:00:00Z', '2026-12-01T10:00:00+05:30', '2020-01-01T00:00:00Z', null),
  owner_email: fc.constantFrom('asha@northstar.example', 'former@northstar.example', 'nobody@northstar.example', null),
  note: fc.constantFrom('a', 'n'.repeat(5000), 'n'.repeat(5001), ''),
  url: fc.constantFrom('https://127.0.0.1:9/other', 'https://127.0.0.1:9/fuzz', 'https://[::1]:9/x'),
  events: fc.constantFrom(
    ['lead.created', 'lead.updated'],
    ['webhook.test'],
    ['lead.created', 'lead.created'],
    [],
    // Every kind, one of them twice.
    [...EVENT_KINDS, 'lead.created'],
    ['nope'],
  ),
  description: fc.constantFrom(null, '', 'd'.repeat(500), 'd'.repeat(501)),
};

/** PLAUSIBLE's values for a field (its own entries only: `constructor` names no field of it). */
const plausible = (path: string): fc.Arbitrary<unknown> =>
  Object.hasOwn(PLAUSIBLE, path) ? PLAUSIBLE[path]! : weirdValue;

type Mutation = { kind: 'set'; path: string; value: unknown } | { kind: 'delete'; path: string };

/** None to three changes to a body, mostly one field at a time, mostly to values the field could hold. */
const mutations = (fields: string[]) =>
  fc.array(
    fc.oneof(
      {
        weight: 6,
        arbitrary: fc
          .constantFrom(...fields)
          .chain((path) =>
            fc
              .oneof(weirdValue, plausible(path), plausible(path), plausible(path))
              .map((value) => ({ kind: 'set' as const, path, value })),
          ),
      },
      {
        weight: 1,
        arbitrary: fc
          .constantFrom(...UNKNOWN_FIELDS)
          .chain((path) => weirdValue.map((value) => ({ kind: 'set' as const, path, value }))),
      },
      {
        weight: 1,
        arbitrary: fc.record({ kind: fc.constant('delete' as const), path: fc.constantFrom(...fields, 'extra') }),
      },
    ),
    { maxLength: 3 },
  );

function mutated(base: Record<string, unknown>, changes: Mutation[]): Record<string, unknown> {
  const body = structuredClone(base);
  for (const change of changes) {
    if (change.kind === 'delete') delete body[change.path.split('.')[0]!];
    else setPath(body, change.path, change.value);
  }
  return body;
}

let serial = 0;
/** A valid lead body for a new person each time (the base the mutations start from). */
function freshLead(): Record<string, unknown> {
  serial += 1;
  const n = `${process.pid % 1000}${String(serial).padStart(6, '0')}`;
  return { full_name: 'Fuzz Person', phone: `98${n.slice(-8)}`, email: `fuzz.${n}@example.com`, consent: true };
}

/** A JSON object body built from a valid one by the mutations, or a whole body that is not one at all. */
const bodyFrom = (base: () => Record<string, unknown>, fields: string[]): fc.Arbitrary<Buffer> =>
  fc.oneof(
    { weight: 6, arbitrary: mutations(fields).map((changes) => Buffer.from(toJson(mutated(base(), changes)))) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        weirdValue.map((value) => Buffer.from(toJson(value))),
        fc
          .constantFrom('', ' ', '{', '{"full_name":', 'nul', '{"a":1,"a":2}', '{"__proto__":{"x":1}}')
          .map((s) => Buffer.from(s)),
        fc.constant(Buffer.from('{"constructor":{"prototype":{"x":1}}}')),
        // Not UTF-8: a lone surrogate's bytes, an overlong NUL, a stray continuation byte; a byte order mark.
        fc
          .constantFrom('eda080', 'c080', '80', 'ff', 'efbbbf')
          .map((hex) => Buffer.concat([Buffer.from('{"full_name":"'), Buffer.from(hex, 'hex'), Buffer.from('"}')])),
        fc.constant(Buffer.concat([Buffer.from('efbbbf', 'hex'), Buffer.from(toJson(base()))])),
        fc.integer({ min: 60_000, max: 70_000 }).map((n) => Buffer.from(toJson({ ...base(), message: 'm'.repeat(n) }))),
      ),
    },
  );

const VALID_IDEMPOTENCY_KEY = fc.stringMatching(/^[A-Za-z0-9_.:-]{1,40}$/);
const idempotencyKey = fc.oneof(
  { weight: 2, arbitrary: VALID_IDEMPOTENCY_KEY },
  // A few keys again and again: repeats with the same or another body.
  { weight: 2, arbitrary: fc.constantFrom('fuzz-1', 'fuzz-2', 'fuzz-3') },
  fc.constantFrom('', ' ', 'a b', 'a,b', 'é', '😀', 'k'.repeat(256), 'key\u0000', 'key\r', '%41'),
  goodText(20),
);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Path ids: canonical ones that name nothing, non-canonical forms, overlong, percent faults, the other tenant's. */
function pathId(own: string[], foreign: string[]): fc.Arbitrary<{ id: string; foreign: boolean }> {
  const plain = (id: string) => ({ id, foreign: false });
  const pick = (ids: string[]) => fc.constantFrom(...(ids.length > 0 ? ids : [randomUUID()]));
  return fc.oneof(
    { weight: 8, arbitrary: pick(own).map(plain) },
    { weight: 2, arbitrary: fc.uuid().map(plain) },
    { weight: 2, arbitrary: pick(foreign).map((id) => ({ id, foreign: true })) },
    // An upper-case form of the other tenant's id is still that id.
    { weight: 1, arbitrary: pick(foreign).map((id) => ({ id: id.toUpperCase(), foreign: true })) },
    {
      weight: 3,
      arbitrary: fc
        .oneof(
          pick(own).map((id) => id.toUpperCase()),
          pick(own).map((id) => `{${id}}`),
          pick(own).map((id) => `urn:uuid:${id}`),
          pick(own).map((id) => id.replace(/-/g, '')),
          pick(own).map((id) => `%20${id}`),
          pick(own).map((id) => `${id}%00`),
          pick(own).map((id) => `${id}0`),
          fc.constantFrom('%', '%ZZ', '%00', '%2F', '..', '.', '%2e%2e', '%C3%A9', '%ED%A0%80', '%FF', 'null', '0'),
          fc.integer({ min: 90, max: 400 }).map((n) => 'a'.repeat(n)),
          fc.stringMatching(/^[0-9a-fA-F%-]{0,40}$/),
        )
        .filter((id) => !UUID.test(id) || own.includes(id))
        .map(plain),
    },
  );
}

/** A query string: known and unknown names, repeated, with values percent-encoded or deliberately broken. */
const queryValue = fc.oneof(
  fc.constantFrom('0', '1', '25', '100', '101', '-1', '1.5', '1e2', 'abc', '', ' 5', '0x10', '99999999999999999999'),
  fc.constantFrom('2026-11-01T10:00:00Z', '2026-11-01', '2026-13-01T00:00:00Z', '0000-01-01T00:00:00Z', 'now'),
  fc.constantFrom('%', '%Z', '%00', '%ED%A0%80', '%C0%80', '%FF', '+', '%2B', '&', '=', '%26%3D', '%E2%80%A8'),
  fc.constantFrom('eyJ1IjoiMjAyNi0xMS0wMVQxMDowMDowMFoiLCJpIjoiYSJ9', 'eyJ9', '!!!', 'x'.repeat(201), 'x'.repeat(2000)),
  fc.base64String({ maxLength: 120 }).map(encodeURIComponent),
  goodText(20).map((s) => encodeURIComponent(s)),
);
/** Real cursors, the other workspace's, and real ones with a character changed, cut or doubled. */
const cursorValue = (own: string[], foreign: string[]) =>
  fc.oneof(
    fc.constantFrom(...own, ...foreign),
    fc
      .tuple(fc.constantFrom(...own), fc.nat(), fc.constantFrom('A', '-', '_', '%41', '', '='))
      .map(
        ([cursor, at, piece]) => cursor.slice(0, at % cursor.length) + piece + cursor.slice((at % cursor.length) + 1),
      ),
    fc.constantFrom(...own).map((cursor) => cursor + cursor),
  );

const queryString = (names: string[], values: fc.Arbitrary<string> = queryValue) =>
  fc
    .array(fc.tuple(fc.constantFrom(...names, 'extra', 'limit[]', '', 'a.b'), values), { maxLength: 3 })
    .chain((pairs) =>
      fc
        .constantFrom('?', '?&', '?;')
        .map((lead) =>
          pairs.length === 0 ? '' : lead + pairs.map(([n, v]) => (n === '' ? v : `${n}=${v}`)).join('&'),
        ),
    );

/** The value in `percent` of cases, else undefined. */
const sometimes = <T>(arb: fc.Arbitrary<T>, percent: number): fc.Arbitrary<T | undefined> =>
  fc.oneof({ weight: 100 - percent, arbitrary: fc.constant(undefined) }, { weight: percent, arbitrary: arb });

/** One change to a request's headers: a header set to another value, removed (null), or sent a second time. */
interface HeaderFault {
  name: string;
  value: string | Buffer | null;
  again?: boolean;
}

/**
 * Header faults: Authorization forms and other keys, Content-Type and charset, Content-Encoding, Idempotency-Key,
 * Origin, Accept, Expect, an oversized header. A request gets none, one or two, so most reach the code behind them.
 */
function headerFault(targets: FuzzTargets): fc.Arbitrary<HeaderFault> {
  const unknownKey = fc.stringMatching(/^[A-Za-z0-9]{32}$/).map((r) => `key_live_${r}`);
  const authorization = fc.oneof(
    fc.constantFrom(`Bearer ${targets.secretTest}`, `Bearer ${targets.publicLive}`),
    unknownKey.map((k) => `Bearer ${k}`),
    fc.constantFrom(
      'Bearer',
      'Bearer ',
      'Basic dXNlcjpwYXNz',
      `bearer ${targets.secretLive}`,
      `Bearer  ${targets.secretLive}`,
      `Bearer ${targets.secretLive} extra`,
      `Token ${targets.secretLive}`,
      targets.secretLive,
      `Bearer ${targets.secretLive.slice(0, -1)}`,
      `Bearer ${'k'.repeat(5000)}`,
      'Bearer key_live_é',
      'Bearer key_live_pub_',
      `Bearer ${targets.secretLive}\u0000`,
    ),
  );
  const contentType = fc.constantFrom(
    'application/json; charset=utf-8',
    'application/json;charset=UTF8',
    'APPLICATION/JSON',
    'application/json; charset=latin1',
    'application/json; charset=utf-16',
    'application/json; charset="utf-8"',
    'application/json; charset=',
    'application/json; boundary=x',
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/jsonx',
    'application/vnd.api+json',
    '*/*',
    '',
    ';',
    'application/json, text/plain',
  );
  const set = (name: string) => (value: string | Buffer | null) => ({ name, value });
  return fc.oneof(
    { weight: 4, arbitrary: authorization.map((v) => set('Authorization')(utf8(v))) },
    { weight: 1, arbitrary: fc.constant(set('Authorization')(null)) },
    {
      weight: 1,
      arbitrary: fc.constant({ name: 'Authorization', value: `Bearer ${targets.secretLive}`, again: true }),
    },
    { weight: 3, arbitrary: contentType.map(set('Content-Type')) },
    { weight: 1, arbitrary: fc.constant(set('Content-Type')(null)) },
    {
      weight: 1,
      arbitrary: fc.constantFrom('gzip', 'identity', 'br', 'deflate, gzip', 'x').map(set('Content-Encoding')),
    },
    { weight: 3, arbitrary: idempotencyKey.map((v) => set('Idempotency-Key')(utf8(v))) },
    {
      weight: 2,
      arbitrary: fc
        .constantFrom(
          targets.allowedOrigin,
          'https://evil.example',
          'null',
          'not a url',
          '',
          `${targets.allowedOrigin}/`,
        )
        .map(set('Origin')),
    },
    { weight: 1, arbitrary: fc.constant(set('Origin')(null)) },
    {
      weight: 1,
      arbitrary: fc.constantFrom('application/json', 'text/html', 'application/xml', '').map(set('Accept')),
    },
    { weight: 1, arbitrary: fc.constantFrom('100-continue', 'nothing').map(set('Expect')) },
    { weight: 1, arbitrary: fc.constant(set('X-Padding')('p'.repeat(17_000))) },
  );
}

const faultCount = fc.constantFrom(0, 0, 0, 1, 1, 2);

/** The headers a correct request has, then the faults applied in order. */
function withFaults(baseline: [string, string | Buffer][], faults: HeaderFault[]): [string, string | Buffer][] {
  let headers = [...baseline];
  for (const fault of faults) {
    if (!fault.again) headers = headers.filter(([name]) => name.toLowerCase() !== fault.name.toLowerCase());
    if (fault.value !== null) headers.push([fault.name, fault.value]);
  }
  return headers;
}

/** Header values leave as UTF-8 bytes, so non-ASCII and lone surrogates (as U+FFFD) reach the parser as a client sends them. */
const utf8 = (value: string): Buffer => Buffer.from(value, 'utf8');

const framing = fc.constantFrom<FuzzRequest['framing']>(
  ...Array<FuzzRequest['framing']>(12).fill('length'),
  'chunked',
  'bad-chunk',
  'two-lengths',
);

/** Any fuzzed request to one of the ten public endpoints (and a few methods and paths next to them). */
export function fuzzRequest(targets: FuzzTargets): fc.Arbitrary<FuzzRequest> {
  const leadId = pathId(targets.leadIds, targets.foreignLeadIds);
  const applicationId = pathId(targets.applicationIds, targets.foreignApplicationIds);
  const webhookId = fc.oneof(
    pathId([], []),
    fc.constant(null).map(() => {
      const ids = targets.foreignWebhookIds();
      return ids.length > 0 ? { id: ids[ids.length - 1]!, foreign: true } : { id: randomUUID(), foreign: false };
    }),
  );
  const webhookBase = () => ({
    url: 'https://127.0.0.1:9/fuzz',
    events: ['lead.created'],
    description: 'fuzz',
  });
  const webhookUrl = fc.constantFrom(
    'http://10.1.2.3/hook',
    'https://[::1]/hook',
    'http://localhost:1/hook',
    'ftp://127.0.0.1/hook',
    'javascript:alert(1)',
    'http://user:pw@127.0.0.1/hook',
    'http://127.0.0.1:99999/hook',
    'http://0x7f.1/hook',
    'http://[fe80::1%25eth0]/hook',
    'http://1.2.3.4/hook',
    'http://169.254.169.254/latest',
    `http://127.0.0.1/${'p'.repeat(2100)}`,
    '//127.0.0.1/hook',
    'http:///hook',
  );
  const faults = faultCount.chain((n) => fc.array(headerFault(targets), { minLength: n, maxLength: n }));
  /** A request: a correct one for `caller` (a secret key, the form's public key, or the widget's key in the query), with faults. */
  const request = (
    method: string,
    path: fc.Arbitrary<{ target: string; foreign: boolean }>,
    body: fc.Arbitrary<Buffer | undefined>,
    caller: 'secret' | 'form' | 'widget' = 'secret',
  ): fc.Arbitrary<FuzzRequest> =>
    fc
      .record({
        path,
        body,
        faults,
        framing,
        method: fc.constantFrom(method, method, method, method, method.toLowerCase()),
      })
      .map((r) => {
        const baseline: [string, string | Buffer][] = [];
        if (caller === 'secret') baseline.push(['Authorization', `Bearer ${targets.secretLive}`]);
        if (caller === 'form') baseline.push(['Authorization', `Bearer ${targets.publicLive}`]);
        if (caller !== 'secret') baseline.push(['Origin', targets.allowedOrigin]);
        if (r.body !== undefined) baseline.push(['Content-Type', 'application/json']);
        return {
          method: r.method,
          target: r.path.target,
          headers: withFaults(baseline, r.faults),
          body: r.body,
          framing: r.framing,
          foreign: r.path.foreign,
        };
      });
  const fixed = (target: string) => fc.constant({ target, foreign: false });
  const maybeBody = (arb: fc.Arbitrary<Buffer>) => sometimes(arb, 90);
  const noBody = sometimes(
    bodyFrom(() => ({}), ['a']),
    10,
  );
  const withQuery = (path: string, names: string[]) =>
    queryString(names).map((query) => ({ target: path + query, foreign: false }));
  const byId = (prefix: string, suffix: string, id: fc.Arbitrary<{ id: string; foreign: boolean }>) =>
    id.map(({ id: value, foreign }) => ({ target: `${prefix}${value}${suffix}`, foreign }));

  return fc
    .oneof(
      {
        weight: 4,
        arbitrary: request('POST', fixed('/v1/leads'), maybeBody(bodyFrom(freshLead, [...LEAD_FIELDS, ...NESTED]))),
      },
      {
        weight: 1,
        arbitrary: request(
          'POST',
          fixed('/v1/leads'),
          maybeBody(bodyFrom(() => ({ ...freshLead(), captcha_token: 'token' }), [...LEAD_FIELDS, ...NESTED])),
          'form',
        ),
      },
      { weight: 3, arbitrary: request('GET', withQuery('/v1/leads', LIST_PARAMS), noBody) },
      {
        weight: 2,
        arbitrary: request(
          'GET',
          queryString(
            ['cursor', 'limit'],
            fc.oneof(queryValue, cursorValue(targets.cursors, targets.foreignCursors)),
          ).map((query) => ({ target: `/v1/leads${query}`, foreign: false })),
          noBody,
        ),
      },
      { weight: 2, arbitrary: request('GET', byId('/v1/leads/', '', leadId), noBody) },
      {
        weight: 3,
        arbitrary: request(
          'PATCH',
          byId('/v1/leads/', '', leadId),
          maybeBody(bodyFrom(() => ({ note: 'fuzz note' }), PATCH_FIELDS)),
        ),
      },
      { weight: 2, arbitrary: request('GET', byId('/v1/applications/', '/status', applicationId), noBody) },
      { weight: 1, arbitrary: request('GET', fixed('/v1/webhooks'), noBody) },
      {
        weight: 2,
        arbitrary: request(
          'POST',
          fixed('/v1/webhooks'),
          maybeBody(
            fc.oneof(
              bodyFrom(webhookBase, WEBHOOK_FIELDS),
              webhookUrl.map((url) => Buffer.from(JSON.stringify({ ...webhookBase(), url }))),
            ),
          ),
        ),
      },
      { weight: 2, arbitrary: request('DELETE', byId('/v1/webhooks/', '', webhookId), noBody) },
      {
        weight: 2,
        arbitrary: request(
          'GET',
          fc.oneof(
            withQuery('/v1/widget/config', ['key']),
            fc
              .constantFrom(
                ...Array<string>(4).fill(targets.publicLive),
                targets.secretLive,
                `${targets.publicLive}x`,
                'key_live_pub_',
              )
              .chain((key) => withQuery(`/v1/widget/config?key=${encodeURIComponent(key)}`, ['key']))
              .map(({ target, foreign }) => ({ target: target.replace(/\?([^?]*)\?/, '?$1&'), foreign })),
          ),
          noBody,
          'widget',
        ),
      },
      { weight: 1, arbitrary: request('GET', withQuery('/v1/meta/fields', ['x']), noBody) },
      // Next to the endpoints: other methods, preflights, near-miss paths.
      {
        weight: 1,
        arbitrary: fc
          .record({
            method: fc.constantFrom('PUT', 'OPTIONS', 'HEAD', 'TRACE', 'DELETE', 'POST', 'FOO'),
            target: fc.constantFrom(
              '/v1/leads',
              '/v1/leads/',
              '//v1/leads',
              '/v1/leads?',
              '/V1/LEADS',
              '/v1/widget/config',
              '/v1/meta/fields/',
              '/v1/applications//status',
              '/v1/../v1/leads',
              '*',
              'http://127.0.0.1/v1/leads',
              // Bytes a client should have percent-encoded: UTF-8, a space, a tab, a DEL.
              '/v1/leads/é',
              '/v1/leads?cursor=é',
              '/v1/leads?limit=1 2',
              '/v1/leads/\t',
              '/v1/leads/\u007f',
            ),
            faults,
          })
          .map((r) => ({
            method: r.method,
            target: r.target,
            headers: withFaults([['Authorization', `Bearer ${targets.secretLive}`]], r.faults),
            body: undefined,
            framing: 'length' as const,
            foreign: false,
          })),
      },
    )
    .map(printable);
}

/** A request as text for reports: the bytes as UTF-8, long bodies and headers cut short. */
export function describeRequest(request: FuzzRequest): string {
  const cut = (text: string, max: number) =>
    text.length > max ? `${text.slice(0, max)}…(${text.length} chars)` : text;
  return JSON.stringify({
    method: request.method,
    target: cut(request.target, 300),
    headers: request.headers.map(([name, value]) => [name, cut(value.toString(), 200)]),
    body: request.body === undefined ? undefined : cut(request.body.toString('utf8'), 500),
    framing: request.framing,
  });
}

/** fast-check shows a counterexample with this, instead of a 70 KB body byte by byte. */
function printable(request: FuzzRequest): FuzzRequest {
  return Object.defineProperty(request, fc.toStringMethod, {
    value: () => describeRequest(request),
    enumerable: false,
  });
}

/** The bytes of a fuzzed request. */
export function requestBytes(request: FuzzRequest): Buffer {
  const head: Buffer[] = [
    Buffer.from(`${request.method} ${request.target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n`),
  ];
  for (const [name, value] of request.headers)
    head.push(Buffer.from(`${name}: `), Buffer.from(value), Buffer.from('\r\n'));
  const body = request.body;
  if (body === undefined) return Buffer.concat([...head, Buffer.from('\r\n')]);
  switch (request.framing) {
    case 'length':
      return Buffer.concat([...head, Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]);
    case 'two-lengths':
      return Buffer.concat([
        ...head,
        Buffer.from(`Content-Length: ${body.length}\r\nContent-Length: ${body.length + 1}\r\n\r\n`),
        body,
      ]);
    case 'chunked':
      return Buffer.concat([
        ...head,
        Buffer.from(`Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n`),
        body,
        Buffer.from('\r\n0\r\n\r\n'),
      ]);
    case 'bad-chunk':
      return Buffer.concat([
        ...head,
        Buffer.from(`Transfer-Encoding: chunked\r\n\r\nzz\r\n`),
        body,
        Buffer.from('\r\n0\r\n\r\n'),
      ]);
  }
}
