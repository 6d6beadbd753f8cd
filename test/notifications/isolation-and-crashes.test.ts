import { randomUUID } from 'node:crypto';
import t from 'tap';
import { insertIntents, recordNotificationsBatch } from '../../src/notifications/record.js';
import { claimAtOnce } from '../../src/notifications/outbox.js';
import { smtpTransport } from '../../src/shared/smtp.js';
import { NotificationMailer } from '../../src/subscribers/notification-mailer.js';
import { memberOf } from '../identity/support.js';
import { TestClock } from '../support/app.js';
import {
  capture,
  caughtUp,
  mailTo,
  notifyFixture,
  otherWorkspace,
  pausedEndpoint,
  quiet,
  rawHeader,
  statementCounter,
} from './support.js';

t.test('nobody is mailed about another workspace or what their role may not see, checked at send time', async (t) => {
  const clock = new TestClock(new Date('2026-11-01T10:00:00.000Z'));
  const f = await notifyFixture(t, clock);
  const ws = f.ws.workspace;
  const other = await otherWorkspace(f);
  const user = (email: string) => ws.settings.users.find((u) => u.email === email)!;
  const elsewhere = other.workspace.settings.users[1]!;
  const leadId = await capture(f, { full_name: 'Jaspreet Dhillon', phone: '+919811100050' });
  const otherLead = await (
    await f.app.request('/v1/leads', {
      method: 'POST',
      key: other.live,
      json: { consent: true, full_name: 'Other Person', phone: '+919811100051' },
    })
  ).json();
  await caughtUp(f, () => f.recorder.runOnce());
  // Rows a faulty writer might have made; the send-time checks must refuse each.
  const forged = [
    // Another workspace's member, about this workspace's lead.
    { tenant: ws.id, userId: elsewhere.id, kind: 'lead_assigned' as const, subject: leadId },
    // This workspace's member, about another workspace's lead.
    {
      tenant: ws.id,
      userId: user(memberOf('counsellor')).id,
      kind: 'lead_assigned' as const,
      subject: (otherLead as { id: string }).id,
    },
    // A paused endpoint, to roles that may not resume one.
    ...(['manager', 'counsellor', 'viewer'] as const).map((role) => ({
      tenant: ws.id,
      userId: user(memberOf(role)).id,
      kind: 'endpoint_paused' as const,
      subject: '',
    })),
    // A former member.
    { tenant: ws.id, userId: user('former@northstar.example').id, kind: 'lead_assigned' as const, subject: leadId },
  ];
  const endpointId = await pausedEndpoint(f);
  for (const row of forged)
    await insertIntents(
      f.app.pool,
      row.tenant,
      false,
      [{ userId: row.userId, kind: row.kind, subjectId: row.subject || endpointId, dedupe: randomUUID() }],
      clock.now(),
      clock.now(),
    );
  // The lead is given to the manager before the counsellor's mail goes: it is no longer the counsellor's to hear of.
  const admin = f.client();
  await admin.signIn(memberOf('admin'));
  t.equal(
    (await admin.post(`/console/w/${ws.slug}/leads/${leadId}`, { stage: 'new', owner: memberOf('manager') })).status,
    303,
  );
  await f.pump();
  const theirs = mailTo(f.smtp, 'counsellor@elsewhere.example');
  t.same(
    theirs.map((m) => m.mail.text?.split('\n')[0]),
    ['Lead assigned to you: Other Person (New)'],
    'another workspace’s member hears of their own lead only',
  );
  t.same(
    mailTo(f.smtp, memberOf('counsellor')),
    [],
    'the counsellor: not the other workspace’s lead, nor the reassigned one',
  );
  for (const role of ['manager', 'viewer'] as const)
    t.notOk(
      mailTo(f.smtp, memberOf(role)).some((m) => /paused/.test(m.mail.subject ?? '')),
      `no paused endpoint to the ${role}`,
    );
  t.equal(mailTo(f.smtp, 'former@northstar.example').length, 0, 'nothing to a former member');
  t.same(
    mailTo(f.smtp, memberOf('manager')).map((m) => m.mail.subject?.split(' · ')[0]),
    ['A lead was assigned to you'],
    'the manager, who owns it now, hears of it',
  );
  t.equal(mailTo(f.smtp, memberOf('admin')).length, 1, 'the admin: the paused endpoint');

  // What the role may not see is not counted on Today either.
  const viewer = f.client();
  await viewer.signIn(memberOf('viewer'));
  t.match((await viewer.get(`/console/w/${ws.slug}`)).text, /New for me <span class="count">\(0\)<\/span>/);
});

t.test('a crash between the event and the mail: nothing lost, nothing recorded twice', async (t) => {
  const clock = new TestClock(new Date('2026-11-01T10:00:00.000Z'));
  const f = await notifyFixture(t, clock);
  const counsellor = memberOf('counsellor');
  // The recorder dies in its first transaction (after writing rows, before committing the checkpoint).
  await f.app.pool.query(`CREATE SEQUENCE crash_once;
    CREATE FUNCTION crash_once() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF nextval('crash_once') = 1 THEN RAISE EXCEPTION 'process killed'; END IF; RETURN NULL; END $$;
    CREATE TRIGGER crash_once AFTER INSERT ON member_notifications FOR EACH STATEMENT EXECUTE FUNCTION crash_once();`);
  await capture(f, { full_name: 'Balwinder Sidhu', phone: '+919811100052' });
  // The log is read up to the oldest transaction open on the server: try until the batch reaches the event and dies.
  let died: unknown;
  for (let tries = 0; tries < 400 && !died; tries += 1) {
    died = await recordNotificationsBatch(f.app.pool, f.app.services.personalData, clock.now()).then(
      () => undefined,
      (error: unknown) => error,
    );
    if (!died) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.match(String(died), /process killed/, 'the recorder died in its transaction');
  t.equal(
    (await f.app.pool.query('SELECT 1 FROM member_notifications')).rowCount,
    0,
    'rolled back with its checkpoint',
  );
  await caughtUp(f, () => f.recorder.runOnce());
  t.equal((await f.app.pool.query('SELECT 1 FROM member_notifications')).rowCount, 1, 'recorded on the next start');

  // Replaying the log from its start (a checkpoint lost) records nothing twice.
  await f.app.pool.query(
    `UPDATE subscription_checkpoints SET tx_id = '0', position = 0 WHERE name = 'member-notifications'`,
  );
  await Promise.all([caughtUp(f, () => f.recorder.runOnce()), caughtUp(f, () => f.recorder.runOnce())]);
  t.equal((await f.app.pool.query('SELECT 1 FROM member_notifications')).rowCount, 1, 'a replay adds nothing');

  // A mailer claims the notification and dies before sending: after its lease another sends it, once.
  t.equal((await claimAtOnce(f.app.pool, clock.now(), 10)).length, 1);
  await f.mailer.sendDue();
  t.equal(mailTo(f.smtp, counsellor).length, 0, 'held by the dead mailer’s lease');
  clock.advance(61_000);
  await f.mailer.sendDue();
  t.equal(mailTo(f.smtp, counsellor).length, 1, 'sent once the lease lapsed');
  await f.mailer.sendDue();
  t.equal(mailTo(f.smtp, counsellor).length, 1, 'and not again');

  // The SMTP server accepts but the mailer never learns it (it dies, or the reply is lost): sent again after the
  // back-off, under the same Message-ID, so the mailbox can tell the copy.
  await capture(f, { full_name: 'Kuldeep Grewal', phone: '+919811100053' });
  await caughtUp(f, () => f.recorder.runOnce());
  const real = smtpTransport(f.smtp.url);
  let losing = true;
  const lossy = new NotificationMailer(
    { pool: f.app.pool, now: f.app.services.now, from: 'crm@northstar.example', publicBaseUrl: f.app.baseUrl },
    {
      async sendMail(message) {
        await real.sendMail(message);
        if (losing) throw Object.assign(new Error('connection reset after DATA'), { code: 'ECONNRESET' });
      },
      close: () => real.close(),
    },
    quiet,
  );
  t.teardown(() => lossy.stop());
  await lossy.sendDue();
  losing = false;
  clock.advance(31_000);
  await lossy.sendDue();
  const copies = mailTo(f.smtp, counsellor).filter((m) => /Kuldeep Grewal/.test(m.mail.text ?? ''));
  t.equal(copies.length, 2, 'at least once: a second copy');
  t.equal(rawHeader(copies[0]!, 'message-id'), rawHeader(copies[1]!, 'message-id'), 'with the same Message-ID');
});

t.test(
  'one batch of news from two workspaces: each member told of their own workspace’s leads, the workspaces read once',
  async (t) => {
    const clock = new TestClock(new Date('2026-11-01T10:00:00.000Z'));
    const f = await notifyFixture(t, clock);
    const ws = f.ws.workspace;
    const other = await otherWorkspace(f);
    const captureIn = async (key: string, phone: string) => {
      const response = await f.app.request('/v1/leads', {
        method: 'POST',
        key,
        json: { consent: true, full_name: 'Batch Person', phone },
      });
      t.equal(response.status, 201);
      return ((await response.json()) as { id: string }).id;
    };
    // Interleaved, so the batch holds both workspaces' events in turn.
    const ours: string[] = [];
    const theirs: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      ours.push(await captureIn(f.ws.live, `+91981110007${i}`));
      theirs.push(await captureIn(other.live, `+91981110008${i}`));
    }
    // Every statement the batch sends, counted on the pool's clients while it runs.
    const counted = statementCounter(f.app.pool);
    let result = { events: 0, recorded: 0, busy: false };
    let statements: string[] = [];
    for (let tries = 0; tries < 400 && result.events < 6; tries += 1) {
      await f.app.pool.query(
        `UPDATE subscription_checkpoints SET tx_id = '0', position = 0 WHERE name = 'member-notifications'`,
      );
      ({ result, statements } = await counted(() =>
        recordNotificationsBatch(f.app.pool, f.app.services.personalData, clock.now()),
      ));
      if (result.events < 6) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    t.ok(result.events >= 6, 'one batch read all six leads');
    const rows = await f.app.pool.query<{ tenant_id: string; user_id: string; subject_id: string }>(
      `SELECT tenant_id, user_id, subject_id FROM member_notifications WHERE kind = 'lead_assigned'`,
    );
    const counsellorOf = (workspace: typeof ws, email: string) =>
      workspace.settings.users.find((u) => u.email === email)!.id;
    const toldIn = (tenant: string) =>
      rows.rows
        .filter((r) => r.tenant_id === tenant)
        .map((r) => ({ user: r.user_id, lead: r.subject_id }))
        .sort((a, b) => a.lead.localeCompare(b.lead));
    t.same(
      toldIn(ws.id),
      ours
        .map((lead) => ({ user: counsellorOf(ws, memberOf('counsellor')), lead }))
        .sort((a, b) => a.lead.localeCompare(b.lead)),
      'this workspace’s counsellor, of its three leads',
    );
    t.same(
      toldIn(other.workspace.id),
      theirs
        .map((lead) => ({ user: counsellorOf(other.workspace, 'counsellor@elsewhere.example'), lead }))
        .sort((a, b) => a.lead.localeCompare(b.lead)),
      'the other workspace’s counsellor, of its three',
    );
    t.equal(statements.filter((s) => /FROM workspaces/.test(s)).length, 1, 'the workspaces read in one statement');
    t.equal(
      statements.filter((s) => /INSERT INTO member_notifications/.test(s)).length,
      1,
      'the notifications written in one statement',
    );
  },
);
