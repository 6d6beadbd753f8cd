import fc from 'fast-check';
import t from 'tap';
import { checkProperty } from '../support/properties.js';
import { memberOf } from '../identity/support.js';
import { crawl, formBody, NEVER_SENT, SENT_LAST, submit, validValue, type FormField, type PageForm } from './crawl.js';
import { consoleFixture } from './support.js';

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
  const f = await consoleFixture(t);
  for (const full_name of ['Zoya Mirza', 'Arjun Rao'])
    await f.app.request('/v1/leads', {
      method: 'POST',
      key: f.ws.live,
      json: { full_name, phone: '+919811199900', consent: true },
    });
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  const found = await crawl(owner, f.ws.workspace.slug, { takeAway: false });
  t.same(found.failed, [], 'the crawl with valid values met no failure');

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
