import t from 'tap';
import { can, ROLES } from '../../src/identity/permissions.js';
import { memberOf } from '../identity/support.js';
import { consoleFixture } from './support.js';

const timelineOf = (text: string) => /<ol class="timeline"[^>]*>([\s\S]*?)<\/ol>/.exec(text)?.[1] ?? '';

t.test('a note on a converted lead and on its application, closed or not; the page says what is locked', async (t) => {
  const f = await consoleFixture(t);
  const w = `/console/w/${f.ws.workspace.slug}`;
  const created = await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { full_name: 'Kiran Bedi', phone: '+919812345670', visa_type: 'spouse_dependent', consent: true },
  });
  const lead = ((await created.json()) as { id: string }).id;
  const owner = f.client();
  await owner.signIn(memberOf('owner'));
  const converted = await owner.post(`${w}/leads/${lead}/convert`, { confirm: 'yes' });
  const application = /applications\/([0-9a-f-]{36})/.exec(converted.headers.get('location')!)![1]!;

  const page = await owner.get(`${w}/leads/${lead}`);
  t.match(page.text, 'Converted: what is locked', 'the page says what is locked');
  t.match(page.text, 'Notes are not locked');
  t.notMatch(page.text, /Converted \(converted\)/i, 'converted said once');
  t.notMatch(timelineOf(page.text), /lead\.\w+|application\.\w+/, 'the timeline names its events in words');

  const noted = await owner.post(`${w}/leads/${lead}/notes`, { note: 'Spouse called about the biometrics slot' });
  t.equal(noted.status, 303, 'a converted lead takes a note');
  const after = await owner.get(noted.headers.get('location')!);
  t.match(after.text, 'The note was added to the timeline.');
  t.match(timelineOf(after.text), 'Note: Spouse called about the biometrics slot');
  const api = await f.app.request(`/v1/leads/${lead}`, { method: 'PATCH', key: f.ws.live, json: { note: 'via API' } });
  t.equal(api.status, 409, 'the API’s PATCH still refuses a locked lead, as the spec says');
  t.equal(((await api.json()) as { error: string }).error, 'lead_locked');
  const blank = await owner.post(`${w}/leads/${lead}/notes`, { note: '   ' });
  t.equal(blank.status, 400, 'a blank note is refused by its field');
  t.match(blank.text, 'id="f-note-error"');

  await owner.post(`${w}/applications/${application}/status`, { status: 'closed' });
  const appNote = await owner.post(`${w}/applications/${application}/notes`, { note: 'File archived after the grant' });
  t.equal(appNote.status, 303, 'a closed case takes a note');
  const appPage = await owner.get(appNote.headers.get('location')!);
  t.match(appPage.text, 'The note was added to the timeline.');
  t.match(timelineOf(appPage.text), /Note added<\/strong>[\s\S]*Note: File archived after the grant/);
  const stored = await f.app.pool.query<{ type: string }>(
    `SELECT type FROM events WHERE stream_id = $1 ORDER BY revision DESC LIMIT 1`,
    [`application-${application}`],
  );
  t.equal(stored.rows[0]!.type, 'application.note_added', 'an internal event of its own');

  for (const role of ROLES) {
    const c = f.client();
    await c.signIn(memberOf(role));
    const leadPage = await c.get(`${w}/leads/${lead}`);
    const appView = await c.get(`${w}/applications/${application}`);
    t.equal(leadPage.text.includes(`/leads/${lead}/notes"`), can(role, 'leads.change'), `${role}: lead note form`);
    t.equal(
      appView.text.includes(`/applications/${application}/notes"`),
      can(role, 'applications.change'),
      `${role}: application note form`,
    );
    const tried = await c.post(`${w}/applications/${application}/notes`, { note: `From the ${role}` });
    t.equal(tried.status === 403, !can(role, 'applications.change'), `${role}: refused exactly when the table says`);
  }
});
