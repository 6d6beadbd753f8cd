import t from 'tap';
import { memberOf } from '../identity/support.js';
import { TestClock } from '../support/app.js';
import { consoleFixture } from './support.js';

t.test('an application: convert, advance a module, see it and its lead as of before the conversion', async (t) => {
  const clock = new TestClock();
  const f = await consoleFixture(t, { clock });
  const created = await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { full_name: 'Meera Nair', phone: '+919811122233', consent: true },
  });
  const leadId = ((await created.json()) as { id: string }).id;
  const counsellor = f.client();
  await counsellor.signIn(memberOf('counsellor'));
  const slug = f.ws.workspace.slug;
  clock.advance(60_000);
  const beforeConversion = clock.now().toISOString();
  clock.advance(60_000);
  const converted = await counsellor.post(`/console/w/${slug}/leads/${leadId}/convert`, { confirm: 'yes' });
  t.equal(converted.status, 303);
  const path = new URL(converted.headers.get('location')!, f.app.baseUrl).pathname;
  const opened = await counsellor.get(`${path}?done=converted`);
  t.equal(opened.status, 200);
  t.match(opened.text, /Application APP-\d+/);
  t.match(opened.text, 'Meera Nair');
  t.match(opened.text, 'The lead was converted');

  clock.advance(60_000);
  const advanced = await counsellor.post(`${path}/modules/profile_review/updated`, {});
  t.equal(advanced.status, 303);
  const after = await counsellor.get(path);
  t.match(after.text, /<td>Profile review<\/td>\s*<td>profile<\/td>\s*<td>updated<\/td>/, 'the module is updated');
  const top = /<ol class="timeline"[^>]*>\s*<li>\s*<p><strong>([^<]+)<\/strong>/.exec(after.text)?.[1];
  t.match(top, /^(Module updated|Stage changed)$/, 'the newest event is on top, by its name');
  t.match(after.text, /Module &quot;Profile review&quot; marked updated \(was pending\)/);

  const unknownModule = await counsellor.post(`${path}/modules/no_such_module/updated`, {});
  t.equal(unknownModule.status, 404);
  t.match(unknownModule.text, /class="notice alert"/, 'the refusal in words on the page');

  const then = await counsellor.get(`${path}?as_of=${encodeURIComponent(beforeConversion)}`);
  t.equal(then.status, 200);
  const section = /<section aria-labelledby="then"[\s\S]*?<\/section>/.exec(then.text)![0];
  t.match(section, 'The application did not exist yet at that moment.');
  t.match(section, /<dt>Converted<\/dt>\s*<dd>no<\/dd>/, 'the lead then: not converted');
  t.match(section, 'Meera Nair');
  const nowish = await counsellor.get(`${path}?as_of=${encodeURIComponent(clock.now().toISOString())}`);
  const nowSection = /<section aria-labelledby="then"[\s\S]*?<\/section>/.exec(nowish.text)![0];
  t.match(nowSection, /<dt>Converted<\/dt>\s*<dd>yes<\/dd>/);
  t.match(nowSection, /<td>Profile review<\/td>\s*<td>profile<\/td>\s*<td>updated<\/td>/);
  const future = await counsellor.get(`${path}?as_of=2099-01-01T00:00`);
  t.equal(future.status, 400);
  t.match(future.text, /id="f-as_of-error">Pick a moment in the past/);
  const garbage = await counsellor.get(`${path}?as_of=yesterday`);
  t.equal(garbage.status, 400);

  const list = await counsellor.get(`/console/w/${slug}/applications`);
  t.match(list.text, `href="${path}"`);
  const viewer = f.client();
  await viewer.signIn(memberOf('viewer'));
  t.equal((await viewer.get(path)).status, 200);
  t.notMatch((await viewer.get(path)).text, 'Mark updated', 'a viewer is shown no change');
  const refused = await viewer.post(`${path}/outcome`, { outcome: 'granted' });
  t.equal(refused.status, 403);
  t.match(refused.text, /Your role \(viewer\) does not allow this/);
});
