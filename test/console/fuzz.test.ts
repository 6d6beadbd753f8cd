import fc from 'fast-check';
import t from 'tap';
import { checkProperty } from '../support/properties.js';
import { rawRequest, type RawAnswer } from '../support/raw-http.js';
import { SESSION_COOKIE } from '../../src/console/context.js';
import { findAccountByEmail } from '../../src/identity/accounts.js';
import { startSession } from '../../src/identity/sessions.js';
import { memberOf } from '../identity/support.js';
import {
  answerProblem,
  consoleRoutes,
  madeUpPath,
  MALFORMED,
  requestBytes,
  routePattern,
  WELL_FORMED,
  type ConsoleRoute,
  type ContentKind,
  type Encoded,
} from './content-types.js';
import {
  crawl,
  formBody,
  NEVER_SENT,
  SENT_LAST,
  submit,
  validValue,
  type Crawl,
  type FormField,
  type PageForm,
} from './crawl.js';
import { consoleFixture, type ConsoleClient } from './support.js';
import { leadBulkForms } from './bulk-forms.js';
import { endpointWithDeliveries } from './lists/support.js';

/** The fixture's live leads (the bulk forms select them). */
async function leadIdsOf(f: Awaited<ReturnType<typeof consoleFixture>>): Promise<string[]> {
  const rows = await f.app.pool.query<{ id: string }>('SELECT id FROM leads WHERE tenant_id = $1 AND sandbox = false', [
    f.ws.workspace.id,
  ]);
  return rows.rows.map((r) => r.id);
}

/**
 * The console's fuzz test (as test/http/fuzz.test.ts is the API's): signed in as an owner, every form and query the
 * console renders (found by crawling it, which also makes the records its pages list) is sent with malformed values
 * (NUL bytes, overlong text, dates that do not exist, ids that are not uuids, repeated keys, a Referer that is no
 * address, a path whose id is not one). No answer may be a 5xx. FC_SEED replays a run (the seed is printed).
 */
const RUNS = 600;

/**
 * Forms whose 500s wait for their page's schema (src/console/schemas.ts) from the helper converting it: their 500s
 * are listed as a todo, not thrown. Empty it once the lead form declares follow_up as DateTimeLocal.
 */
const AWAITING_CONVERSION: RegExp[] = [];

const UUID_IN_PATH = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

/** A malformed (or valid) value for one control. */
function valueFor(field: FormField): fc.Arbitrary<string | string[] | undefined> {
  const valid = validValue(field);
  return fc.oneof(
    fc.constant(valid),
    fc.constant(undefined),
    fc.constant(''),
    fc.constant('a\u0000b'),
    fc.constant('\u0000'),
    fc.constant('x'.repeat(5_000)),
    fc.constant('y\u0001\u001f\u007f'),
    fc.constant('2026-13-45T99:99'),
    fc.constant('2026-02-30'),
    fc.constant('9999-12-31T23:59'),
    fc.constant('not-a-uuid'),
    fc.constant('00000000-0000-0000-0000-000000000000'),
    fc.constant('-1'),
    fc.constant('1e309'),
    fc.constant('99999999999999999999999'),
    fc.constant('1,2.3.4'),
    fc.constant('\uD800'),
    fc.string({ maxLength: 40 }),
    fc.constant<string[]>(valid === undefined ? ['a', 'b'] : [valid, valid]),
  );
}

/** A form with one malformed send: a value per control, maybe a path whose id is not one, maybe a bad Referer. */
function attack(form: PageForm) {
  return fc.record({
    form: fc.constant(form),
    values: fc.tuple(...form.fields.map(valueFor)),
    extraRepeat: fc.boolean(),
    breakPath: UUID_IN_PATH.test(form.action) ? fc.boolean() : fc.constant(false),
    referer: fc.constantFrom(undefined, 'not a url', '::::', 'http://[::1'),
  });
}

type Attack = ReturnType<typeof attack> extends fc.Arbitrary<infer A> ? A : never;

t.test('no console form or query answers 5xx, whatever it is sent', async (t) => {
  const f = await consoleFixture(t, { config: { webhookAllowLoopback: true } });
  const endpoint = await endpointWithDeliveries(f.app, f.ws);
  for (const full_name of ['Zoya Mirza', 'Arjun Rao'])
    await f.app.request('/v1/leads', {
      method: 'POST',
      key: f.ws.live,
      json: { full_name, phone: '+919811199900', consent: true },
    });
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  const log = `/console/w/${f.ws.workspace.slug}/webhooks/${endpoint}`;
  const found = await crawl(owner, f.ws.workspace.slug, { takeAway: false, start: [`${log}?state=failing&size=25`] });
  t.ok(
    found.pages.some((p) => p.startsWith(log)),
    'the crawl reached the delivery log',
  );
  t.same(found.failed, [], 'the crawl with valid values met no failure');
  found.forms.push(...(await leadBulkForms(owner, f.ws.workspace.slug, await leadIdsOf(f))));

  // One form of each action and method, and each page's query as a GET form of its own names.
  const forms = new Map<string, PageForm>();
  for (const form of found.forms)
    if (!NEVER_SENT.test(form.action)) forms.set(`${form.method} ${form.action.split('?')[0]}`, form);
  for (const page of found.pages) {
    const [path, query] = page.split('?');
    if (!query) continue;
    const fields = [...new URLSearchParams(query)].map(([name, value]): FormField => ({
      name,
      tag: 'input',
      type: 'text',
      value,
      options: [],
      checked: false,
    }));
    forms.set(`GET ${page}`, { page, method: 'GET', action: path!, multipart: false, fields });
  }
  const all = [...forms.values()];
  t.ok(
    all.some((form) => form.method === 'POST' && form.action.endsWith('/leads/board/move')),
    'a card’s move form is among them',
  );
  t.ok(all.length > 30, `${all.length} forms and queries to send`);

  let csrf = await owner.csrf();
  const awaiting: string[] = [];
  const send = async (a: Attack) => {
    // The token is always the session's own (a wrong one is a 403 before any field is read: nothing to fuzz).
    const pairs = formBody(a.form, (field) =>
      field.name === '_csrf' ? undefined : a.values[a.form.fields.indexOf(field)],
    );
    if (a.form.method === 'POST' && !a.form.multipart) pairs.push(['_csrf', csrf]);
    if (a.extraRepeat && pairs.length > 0) pairs.push(pairs[0]!);
    const own = a.form.action.replace(/_csrf=[^&]*/, `_csrf=${csrf}`);
    const action = a.breakPath ? own.replace(UUID_IN_PATH, 'not-a-uuid') : own;
    const headers: Record<string, string> = a.referer ? { referer: a.referer } : {};
    const answer = await submit(owner, { ...a.form, action }, pairs, headers);
    const failure = `${a.form.method} ${action} answered ${answer.status}: ${JSON.stringify(pairs).slice(0, 600)}`;
    if (answer.status >= 500 && AWAITING_CONVERSION.some((form) => form.test(action))) awaiting.push(failure);
    else if (answer.status >= 500) throw new Error(failure);
    // The session may end (a member deactivated, say): sign in again so later runs still reach the forms.
    if (answer.location === '/console/sign-in') {
      await owner.signIn(memberOf('owner'));
      csrf = await owner.csrf();
    }
  };
  // The forms that take something away (erase, deactivate, revoke…) last, so the others still have their records.
  const keeping = all.filter((form) => !SENT_LAST.test(form.action));
  const takingAway = all.filter((form) => SENT_LAST.test(form.action));
  await checkProperty(
    t,
    'every malformed console request answers below 500',
    fc.asyncProperty(fc.constantFrom(...keeping).chain(attack), send),
    RUNS,
  );
  await checkProperty(
    t,
    'every malformed request to a form that takes something away answers below 500',
    fc.asyncProperty(fc.constantFrom(...takingAway).chain(attack), send),
    RUNS / 4,
  );
  for (const failure of awaiting) t.comment(failure);
  t.same(awaiting, [], `${awaiting.length} 500(s) from forms awaiting their schema (listed above)`, {
    todo: AWAITING_CONVERSION.length > 0 ? 'the lead form declares its schema when converted' : false,
  });
});

/**
 * The second half: every method of every console route (its route table) sent every content type a browser or a
 * script can send, well-formed and malformed (test/console/content-types.ts), anonymously and signed in as an owner
 * with the session's CSRF token. No answer may be a 5xx, and every refusal is well-formed: a page, or where the
 * console answers JSON (to a request sent as JSON only) the spec's Error body. First each combination once (about
 * 5,000 requests, over raw sockets), then TYPE_RUNS seeded ones mixing types, labels, values and origins.
 */
const TYPE_RUNS = 400;
/** Seeds that once failed, run first every time: 12345 met a JSON refusal without the Error body's request_id. */
const KEPT_TYPE_SEEDS: number[] = [12345];

const KINDS = [...WELL_FORMED, ...MALFORMED];

/** A route as sent: a path for it (one the crawl saw, else made up) and the form the console renders for it. */
interface Target {
  route: ConsoleRoute;
  path: string;
  form: PageForm | undefined;
}

const pathOf = (target: string) => target.split('?')[0]!;
const withoutCsrf = (target: string) => target.replace(/([?&])_csrf=[^&]*&?/, '$1').replace(/[?&]$/, '');

/** Where the crawl found the route (a page for a GET, a form's action for a POST), or a made-up path for it. */
function targetOf(route: ConsoleRoute, found: Crawl, slug: string): Target {
  const pattern = routePattern(route.url);
  if (route.method === 'POST') {
    const form = found.forms.find((f) => f.method === 'POST' && pattern.test(pathOf(f.action)));
    return { route, path: form ? withoutCsrf(form.action) : madeUpPath(route.url, slug), form };
  }
  const page = found.pages.find((p) => pattern.test(pathOf(p)));
  return { route, path: page ?? madeUpPath(route.url, slug), form: undefined };
}

/**
 * The owner's session and its CSRF token, started again whenever a request ended it (sign-out, say). It is started
 * as the sign-in form starts one, but without a password: the sign-ins a run needs would use up the password buckets.
 */
class OwnerSession {
  csrf = '';
  readonly client: ConsoleClient;
  constructor(client: ConsoleClient) {
    this.client = client;
  }

  async start(): Promise<void> {
    const { pool, services } = this.client.app;
    const account = await findAccountByEmail(pool, memberOf('owner'));
    const id = await startSession(pool, account!.id, services.now(), { userAgent: 'fuzz', address: '127.0.0.1' });
    this.client.cookie = `${SESSION_COOKIE}=${id}`;
    this.csrf = await this.client.csrf();
  }

  /** A new session (a password change starts one) is kept; an ended one is started again. */
  async keepAfter(answer: RawAnswer): Promise<void> {
    const id = [...(answer.headers['set-cookie'] ?? '').matchAll(/vcrm_session=([^;]*)/g)].at(-1)?.[1];
    if (id) {
      this.client.cookie = `vcrm_session=${id}`;
      this.csrf = await this.client.csrf();
    } else if (id === '' || answer.headers.location?.startsWith('/console/sign-in')) await this.start();
  }
}

/** One request's parts: its route, its body and how it is labelled, whether the owner sends it, from which origin. */
interface Send {
  target: Target;
  kind: ContentKind;
  signedIn: boolean;
  /** The form's fields as sent (its own `_csrf` left out: the session's is added). */
  pairs: [string, string][];
  relabel?: (encoded: Encoded) => Encoded;
  origin?: string | null;
}

/** The request's target: the route's path and, signed in, the CSRF token in the query of a multipart body. */
function targetWithToken(send: Send, csrf: string): string {
  if (!send.signedIn || !send.kind.multipart || send.target.route.method !== 'POST') return send.target.path;
  return `${send.target.path}${send.target.path.includes('?') ? '&' : '?'}_csrf=${encodeURIComponent(csrf)}`;
}

/** How many answers of each status each kind of request got, for the log: what the requests reached. */
const tally = new Map<string, number>();

/** Sends one request over a raw socket; answers what is wrong with the answer, or undefined. */
async function sendOne(session: OwnerSession, send: Send): Promise<string | undefined> {
  const { route } = send.target;
  const token: [string, string][] =
    send.signedIn && route.method === 'POST' && !send.kind.multipart ? [['_csrf', session.csrf]] : [];
  const encoded = (send.relabel ?? ((e: Encoded) => e))(send.kind.encode([...send.pairs, ...token], send.target.form));
  const target = targetWithToken(send, session.csrf);
  const bytes = requestBytes(session.client.app.baseUrl, {
    method: route.method,
    target,
    cookie: send.signedIn ? session.client.cookie : undefined,
    origin: send.origin,
    encoded,
  });
  const answer = await rawRequest(Number(new URL(session.client.app.baseUrl).port), bytes, 15_000);
  if (send.signedIn) await session.keepAfter(answer);
  const counted = `${send.signedIn ? 'signed in' : 'anonymous'} ${route.method} ${answer.status}`;
  tally.set(counted, (tally.get(counted) ?? 0) + 1);
  const problem = answerProblem(route.method, encoded.contentType, answer);
  const who = send.signedIn ? 'signed in' : 'anonymous';
  return problem && `${route.method} ${target} (${send.kind.name}, ${who}): ${problem}: ${answer.body.slice(0, 300)}`;
}

/** The valid values of the route's form, as the crawl would fill it in. */
const validPairs = (form: PageForm | undefined) =>
  form ? formBody(form, (field) => (field.name === '_csrf' ? undefined : validValue(field))) : [];

/** A value a field should not hold (or may): control characters, lone surrogates, overlong text, nothing. */
const oddValue = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('', 'a\u0000b', '\uD800', 'x'.repeat(5_000), '%zz', '2026-13-45T99:99', 'not-a-uuid', '1e309'),
);
const oddName = fc.oneof(
  fc.constantFrom('_csrf', 'id', 'lead_id', 'email', 'password', '__proto__', 'constructor', 'a[b]', ''),
  fc.string({ maxLength: 12 }),
);

/** Content types a request may be labelled with instead of its body's own. */
const LABELS = [
  'application/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=----console-fuzz-7MA4YWxkTrZu0gW',
  'text/plain',
  'APPLICATION/JSON',
  'application/json; charset=utf-8',
  'application/json;charset="UTF-8"',
  'application/x-www-form-urlencoded; charset=utf-8',
  'application/xml',
  'application/json-patch+json',
  'text/html',
  '*/*',
  '',
];

/** A change to what goes on the wire, named so a counterexample reads as words, not as source. */
const change = (name: string, apply: (encoded: Encoded) => Encoded) =>
  Object.assign(apply, { [fc.toStringMethod]: () => name });

/** A Content-Type as the body's, another one, or the body's spelled otherwise; or the body cut short. */
const relabel = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom(...LABELS).map((label) => change(`labelled ${label}`, (e) => ({ ...e, contentType: label }))),
  fc.constant(change('upper case', (e) => ({ ...e, contentType: e.contentType?.toUpperCase() }))),
  fc.constant(
    change('more parameters', (e) => ({
      ...e,
      contentType: e.contentType && `${e.contentType}; charset=utf-8; q="a;b"`,
    })),
  ),
  fc.nat().map((n) => change(`cut at ${n}`, (e) => ({ ...e, body: e.body?.subarray(0, n % (e.body.length + 1)) }))),
);

/** One seeded request: a route, a body, its label, its values changed and extra fields, signed in or not, an origin. */
function randomSend(targets: Target[]): fc.Arbitrary<Send> {
  return fc
    .record({
      target: fc.constantFrom(...targets),
      kind: fc.constantFrom(...KINDS),
      signedIn: fc.boolean(),
      changed: fc.array(fc.tuple(fc.nat(), oddValue), { maxLength: 3 }),
      extra: fc.array(fc.tuple(oddName, oddValue), { maxLength: 2 }),
      relabel,
      origin: fc.constantFrom<string | null | undefined>(undefined, undefined, null, 'https://evil.example'),
    })
    .map(({ target, changed, extra, ...rest }) => {
      const pairs = validPairs(target.form);
      for (const [at, value] of changed) if (pairs.length > 0) pairs[at % pairs.length]![1] = value;
      return { target, pairs: [...pairs, ...extra], ...rest };
    });
}

t.test('every console route, sent every content type, answers below 500 in the form its request reads', async (t) => {
  const f = await consoleFixture(t);
  await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { full_name: 'Zoya Mirza', phone: '+919811199900', consent: true },
  });
  const slug = f.ws.workspace.slug;
  const session = new OwnerSession(f.client());
  await session.start();
  const found = await crawl(session.client, slug, { takeAway: false });
  found.forms.push(...(await leadBulkForms(session.client, slug, await leadIdsOf(f))));
  const routes = await consoleRoutes(f.app.services);
  t.ok(routes.length > 100, `the console registers ${routes.length} methods of routes`);
  // The routes that take something away last, so the others still have their records.
  const targets = routes
    .map((route) => targetOf(route, found, slug))
    .sort((a, b) => Number(SENT_LAST.test(a.path)) - Number(SENT_LAST.test(b.path)));

  const failures: string[] = [];
  for (const target of targets)
    for (const kind of KINDS)
      for (const signedIn of [false, true]) {
        const problem = await sendOne(session, { target, kind, signedIn, pairs: validPairs(target.form) });
        if (problem) failures.push(problem);
      }
  for (const failure of failures.slice(0, 40)) t.comment(failure);
  t.same(failures.length, 0, `${targets.length * KINDS.length * 2} requests, ${failures.length} failures (above)`);

  await checkProperty(
    t,
    'a console request of any content type, label and values answers below 500 in the form it reads',
    fc.asyncProperty(randomSend(targets), async (send) => {
      const problem = await sendOne(session, send);
      if (problem) throw new Error(problem);
    }),
    TYPE_RUNS,
    KEPT_TYPE_SEEDS,
  );
  t.comment(
    `answers: ${[...tally]
      .sort()
      .map(([k, n]) => `${k}: ${n}`)
      .join(', ')}`,
  );
});
