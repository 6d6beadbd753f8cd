import t from 'tap';
import { settingsOf } from '../../src/notifications/settings.js';
import { setWorkspaceTimeZone } from '../../src/workspaces/repository.js';
import { memberOf } from '../identity/support.js';
import { seedWorkspace, TestClock } from '../support/app.js';
import { capture, mailTo, notifyFixture, rawHeader, unsubscribePathOf } from './support.js';

const HOUR = 3_600_000;

t.test(
  'a digest at 08:00 in the workspace zone instead of mail at once, once a day, nothing when nothing',
  async (t) => {
    // 00:00 UTC is 05:30 in Kolkata: before the member's morning.
    const clock = new TestClock(new Date('2026-11-01T00:00:00.000Z'));
    const f = await notifyFixture(t, clock);
    await setWorkspaceTimeZone(f.app.pool, f.ws.workspace.id, 'Asia/Kolkata');
    const slug = f.ws.workspace.slug;
    const counsellor = memberOf('counsellor');
    const c = f.client();
    await c.signIn(counsellor);
    const page = await c.get(`/console/w/${slug}/notifications`);
    t.match(page.text, 'Each morning at 08:00 in Asia/Kolkata');
    t.equal((await c.post(`/console/w/${slug}/notifications`, { digest: 'on' })).status, 303, 'digest only');
    t.match((await c.get(`/console/w/${slug}/notifications?done=saved`)).text, 'Saved: your notification emails');

    await capture(f, { full_name: 'Harpreet Gill', phone: '+919811100045' });
    await capture(f, { full_name: 'Anita Desai', phone: '+919811100046' });
    await f.pump();
    t.equal(mailTo(f.smtp, counsellor).length, 0, 'nothing at once');

    clock.advance(2 * HOUR); // 07:30 there
    await f.pump();
    t.equal(mailTo(f.smtp, counsellor).length, 0, 'not before 08:00 in the workspace zone');

    clock.advance(HOUR / 2); // 08:00 there
    await f.pump();
    const digests = mailTo(f.smtp, counsellor);
    t.equal(digests.length, 1, 'one digest');
    t.match(digests[0]!.mail.subject, /^Your digest for 2026-11-01 · /);
    t.match(digests[0]!.mail.text, 'Lead assigned to you: Harpreet Gill');
    t.match(digests[0]!.mail.text, 'Lead assigned to you: Anita Desai');
    t.equal(rawHeader(digests[0]!, 'list-unsubscribe-post'), 'List-Unsubscribe=One-Click');

    await capture(f, { full_name: 'Rohan Kapoor', phone: '+919811100047' });
    clock.advance(HOUR);
    await f.pump();
    t.equal(mailTo(f.smtp, counsellor).length, 1, 'what came after the digest waits for tomorrow’s');
    clock.advance(23 * HOUR);
    await f.pump();
    t.equal(mailTo(f.smtp, counsellor).length, 2, 'the next morning’s digest');
    t.match(mailTo(f.smtp, counsellor)[1]!.mail.text, 'Rohan Kapoor');
    t.notMatch(mailTo(f.smtp, counsellor)[1]!.mail.text, 'Harpreet Gill', 'nothing twice');
    clock.advance(24 * HOUR);
    await f.pump();
    t.equal(mailTo(f.smtp, counsellor).length, 2, 'no digest when there is nothing to say');
  },
);

t.test('unsubscribe: GET asks, POST stops; no sign-in; another member’s or workspace’s token refused', async (t) => {
  const clock = new TestClock(new Date('2026-11-01T10:00:00.000Z'));
  const f = await notifyFixture(t, clock);
  const other = await seedWorkspace(f.app, {
    users: [
      { name: 'Other owner', email: 'owner@elsewhere.example', role: 'owner', branch: 'DEL' },
      { name: 'Other counsellor', email: memberOf('counsellor'), role: 'counsellor', branch: 'DEL' },
    ],
  });
  const ws = f.ws.workspace;
  const counsellor = ws.settings.users.find((u) => u.email === memberOf('counsellor'))!;
  const admin = ws.settings.users.find((u) => u.email === memberOf('admin'))!;
  await capture(f, { full_name: 'Simran Kaur', phone: '+919811100048' });
  await f.pump();
  const [mail] = mailTo(f.smtp, counsellor.email);
  const path = unsubscribePathOf(mail!);
  t.match(mail!.mail.text, `Stop these emails (no sign-in needed): ${f.app.baseUrl}${path}`);
  const token = path.split('/').at(-1)!;

  // A GET (a mail client's prefetch, a link scanner) only asks.
  const asked = await fetch(f.app.baseUrl + path);
  t.equal(asked.status, 200);
  const askedText = await asked.text();
  t.match(askedText, 'Stop every notification email from');
  t.match(askedText, /<form method="post" action="[^"]+">/);
  t.same(await settingsOf(f.app.pool, ws.id, counsellor.id), { atOnce: true, digest: false }, 'GET changed nothing');

  // The token works for its own member of its own workspace only.
  const refused = [
    `/console/unsubscribe/${ws.slug}/${admin.id}/${token}`,
    `/console/unsubscribe/${other.workspace.slug}/${counsellor.id}/${token}`,
    `/console/unsubscribe/${other.workspace.slug}/${other.workspace.settings.users[1]!.id}/${token}`,
    `/console/unsubscribe/${ws.slug}/${counsellor.id}/${'A'.repeat(43)}`,
  ];
  for (const wrong of refused) {
    t.equal((await fetch(f.app.baseUrl + wrong)).status, 404, `GET ${wrong.split('/').slice(3, 5).join('/')}`);
    const posted = await fetch(f.app.baseUrl + wrong, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    t.equal(posted.status, 404, 'POST refused too');
  }
  t.same(await settingsOf(f.app.pool, ws.id, admin.id), { atOnce: true, digest: false }, 'the admin still subscribed');

  // A POST with neither the page's confirmation nor the one-click value does nothing.
  const bare = await fetch(f.app.baseUrl + path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: '',
  });
  t.equal(bare.status, 400);
  t.same(await settingsOf(f.app.pool, ws.id, counsellor.id), { atOnce: true, digest: false });

  // The mail client's one-click POST (RFC 8058): no cookie, no Origin, no CSRF token.
  const oneClick = await fetch(f.app.baseUrl + path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'List-Unsubscribe=One-Click',
  });
  t.equal(oneClick.status, 200);
  t.match(await oneClick.text(), 'Done: no more notification emails from');
  t.same(await settingsOf(f.app.pool, ws.id, counsellor.id), { atOnce: false, digest: false });

  await capture(f, { full_name: 'Manpreet Brar', phone: '+919811100049' });
  await f.pump();
  t.equal(mailTo(f.smtp, counsellor.email).length, 1, 'no mail after unsubscribing');
  const c = f.client();
  await c.signIn(counsellor.email);
  t.match((await c.get(`/console/w/${ws.slug}`)).text, /New for me <span class="count">\(2\)<\/span>/, 'still counted');
  t.same(
    await settingsOf(f.app.pool, other.workspace.id, other.workspace.settings.users[1]!.id),
    { atOnce: true, digest: false },
    'the same person’s membership elsewhere is untouched',
  );
});
