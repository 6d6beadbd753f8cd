import { Writable } from 'node:stream';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { pauseEndpoint } from '../../src/commands/webhooks/endpoints.js';
import { loadConfig } from '../../src/config.js';
import { startWorkers } from '../../src/subscribers/index.js';
import { seedWorkspace, TestClock } from '../support/app.js';
import { TestSmtpServer } from '../support/smtp.js';
import { resourcePayload, webhookHarness, type Harness } from './support/harness.js';
import { waitFor } from './support/receiver.js';

// The owners of the seeded workspace: two active owners, an inactive one and a counsellor (who is no owner).
const USERS = [
  { name: 'Asha Rao', email: 'asha@northstar.example', role: 'owner', branch: 'DEL' },
  { name: 'Ravi Menon', email: 'Ravi.Menon@northstar.example', role: 'owner', branch: 'BLR' },
  { name: 'Past Owner', email: 'past-owner@northstar.example', role: 'owner', branch: 'DEL', active: false },
  { name: 'Vikram Singh', email: 'vikram@northstar.example', role: 'counsellor', branch: 'DEL' },
] as const;
const ACTIVE_OWNERS = ['asha@northstar.example', 'ravi.menon@northstar.example'];
const QUERY_TOKEN = 'query-token-never-mailed';

async function harness(t: Test, config: { smtpUrl?: string }, now?: () => Date): Promise<Harness> {
  return webhookHarness(t, {
    now,
    config,
    definition: { users: USERS.map((u) => ({ ...u })) },
  });
}

/** Makes the endpoint fail 50 times in a row through real deliveries; resolves with the paused endpoint's id. */
async function driveToPause(h: Harness): Promise<{ id: string; secret: string }> {
  h.receiver.reply = () => ({ status: 503 });
  const endpoint = await h.createEndpoint({
    url: h.receiver.url('localhost', `/hooks?token=${QUERY_TOKEN}`),
    events: ['document.uploaded'],
  });
  for (let i = 0; i < 50; i++) await h.appendEvent('document.uploaded', resourcePayload(`file ${i}.pdf`));
  await waitFor(async () => {
    const row = await h.pool.query("SELECT 1 FROM webhook_endpoints WHERE id = $1 AND status = 'paused'", [
      endpoint.id,
    ]);
    return row.rowCount === 1;
  }, 'the endpoint is paused');
  return endpoint;
}

async function notices(h: Harness, endpointId: string) {
  return (
    await h.pool.query<{
      recipient: string;
      status: string;
      attempts: number;
      sent_at: Date | null;
      last_error: string;
    }>(
      'SELECT recipient, status, attempts, sent_at, last_error FROM webhook_notifications WHERE endpoint_id = $1 ORDER BY recipient',
      [endpointId],
    )
  ).rows;
}

t.test('a paused endpoint emails each active owner once, with what failed and how to resume', async (t) => {
  const smtp = await TestSmtpServer.start();
  t.teardown(() => smtp.stop());
  const h = await harness(t, { smtpUrl: smtp.url });
  // Two sets of workers, as two service processes: each notice is still sent once.
  await h.startWorkers({ concurrency: 4 });
  await h.startWorkers({ concurrency: 4 });
  const endpoint = await driveToPause(h);
  await waitFor(() => smtp.received.length >= 2, 'two emails arrived');
  await waitFor(async () => (await notices(h, endpoint.id)).every((n) => n.status === 'sent'), 'both marked sent');
  // Give a duplicate a chance to arrive before counting.
  await new Promise((r) => setTimeout(r, 1500));
  t.same(smtp.received.map((m) => m.to).sort(), ACTIVE_OWNERS.map((a) => [a]).sort(), 'one email per active owner');
  const rows = await notices(h, endpoint.id);
  t.same(
    rows.map((r) => [r.recipient.toLowerCase(), r.status, r.attempts]),
    ACTIVE_OWNERS.map((a) => [a, 'sent', 1]),
    'the outbox holds one sent row per active owner',
  );
  for (const { mail, from } of smtp.received) {
    const text = mail.text ?? '';
    const url = `https://localhost:${new URL(h.receiver.url()).port}/hooks`;
    t.equal(mail.subject, `Webhook endpoint paused: ${url}`, 'the subject names the endpoint');
    t.match(from, /@/, 'it comes from SMTP_FROM');
    t.match(text, /^Hello (Asha Rao|Ravi Menon),/, 'addressed to the owner by name');
    t.match(text, endpoint.id, 'names the endpoint id');
    t.match(text, new RegExp(`workspace ${h.ws.workspace.slug} `), 'names the workspace');
    t.match(text, /because \d+ deliveries failed in a row/, 'says why');
    t.match(text, /\d{4}-\d\d-\d\dT[^\n]+HTTP 503/, 'lists the last failures with their status');
    t.match(
      text,
      `visa-crm webhook resume ${h.ws.workspace.slug} ${endpoint.id} --as <your email>`,
      'says how to resume from the CLI',
    );
    t.match(text, `/admin/v1/workspaces/${h.ws.workspace.slug}/webhooks/${endpoint.id}/resume`, 'and the admin route');
    t.notOk(text.includes(endpoint.secret), 'never the signing secret');
    t.notOk(text.includes(QUERY_TOKEN) || (mail.subject ?? '').includes(QUERY_TOKEN), 'never the URL query');
  }
});

t.test('without SMTP the pause is logged at warn level and the notice is kept, unsent', async (t) => {
  const h = await harness(t, {});
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const workers = await startWorkers(h.services, pino({ level: 'info' }, sink), { concurrency: 4, pollIntervalMs: 25 });
  t.teardown(() => workers.stop());
  const endpoint = await driveToPause(h);
  await waitFor(() => lines.some((l) => /no SMTP_URL/.test(String(l.msg))), 'the warning is logged');
  const warning = lines.find((l) => /no SMTP_URL/.test(String(l.msg)))!;
  t.equal(warning.level, 40, 'at warn level');
  t.equal(warning.endpoint_id, endpoint.id, 'naming the endpoint');
  t.same(
    (await notices(h, endpoint.id)).map((n) => [n.recipient.toLowerCase(), n.status, n.sent_at]),
    ACTIVE_OWNERS.map((a) => [a, 'not_sent_no_smtp', null]),
    'the record is kept for each active owner',
  );
  const logged = JSON.stringify(lines).toLowerCase();
  for (const user of USERS) t.notOk(logged.includes(user.email.toLowerCase()), `no owner address in the logs`);
});

t.test('a mail server that is down: the notice waits, is sent once when it is back', async (t) => {
  const smtp = await TestSmtpServer.start();
  t.teardown(() => smtp.stop());
  await smtp.stop();
  const clock = new TestClock(new Date());
  const h = await harness(t, { smtpUrl: smtp.url }, clock.now);
  await h.startWorkers({ concurrency: 4, mailPollIntervalMs: 50 });
  const endpoint = await driveToPause(h);
  await waitFor(
    async () => (await notices(h, endpoint.id)).every((n) => n.attempts >= 1 && n.last_error),
    'a first attempt failed',
  );
  const failed = await notices(h, endpoint.id);
  t.ok(
    failed.every((n) => n.status === 'pending' && /^[A-Z]+/.test(n.last_error) && !n.last_error.includes('@')),
    'still pending, with an error code and no address',
  );
  await smtp.open();
  t.equal(smtp.received.length, 0, 'nothing is sent before the backoff');
  clock.advance(31_000);
  await waitFor(() => smtp.received.length >= 2, 'sent once the server is back and the backoff passed');
  await new Promise((r) => setTimeout(r, 500));
  t.equal(smtp.received.length, 2, 'exactly once per owner');
  t.ok(
    (await notices(h, endpoint.id)).every((n) => n.status === 'sent' && n.attempts === 2),
    'sent at attempt 2',
  );
});

t.test('a resume before the notice could be sent makes it obsolete: no stale email', async (t) => {
  const smtp = await TestSmtpServer.start();
  t.teardown(() => smtp.stop());
  await smtp.stop();
  const clock = new TestClock(new Date());
  const h = await harness(t, { smtpUrl: smtp.url }, clock.now);
  await h.startWorkers({ concurrency: 4, mailPollIntervalMs: 50 });
  const endpoint = await driveToPause(h);
  await waitFor(async () => (await notices(h, endpoint.id)).every((n) => n.attempts >= 1), 'a first attempt failed');
  h.receiver.reply = () => ({ status: 204 });
  const resumed = await h.admin('POST', `/webhooks/${endpoint.id}/resume`);
  t.equal(resumed.status, 200, 'resumed through the admin interface');
  await smtp.open();
  clock.advance(3_600_000);
  await new Promise((r) => setTimeout(r, 1000));
  t.equal(smtp.received.length, 0, 'no email about a pause that is over');
  t.ok(
    (await notices(h, endpoint.id)).every((n) => n.status === 'obsolete'),
    'kept as obsolete',
  );
});

t.test('a pause whose transaction fails leaves no notice behind, and is retried whole', async (t) => {
  const smtp = await TestSmtpServer.start();
  t.teardown(() => smtp.stop());
  const h = await harness(t, { smtpUrl: smtp.url });
  const endpoint = await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] });
  // A failed statement inside the pause transaction: the outbox insert is refused.
  await h.pool.query(`CREATE FUNCTION refuse_notice() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'injected failure'; END $$`);
  await h.pool.query(
    'CREATE TRIGGER refuse_notice BEFORE INSERT ON webhook_notifications FOR EACH ROW EXECUTE FUNCTION refuse_notice()',
  );
  await t.rejects(pauseEndpoint(h.services, endpoint.id, 50), /injected failure/);
  t.equal((await notices(h, endpoint.id)).length, 0, 'no notice');
  const status = async () =>
    (await h.pool.query<{ status: string }>('SELECT status FROM webhook_endpoints WHERE id = $1', [endpoint.id]))
      .rows[0]!.status;
  t.equal(await status(), 'active', 'and the endpoint is not paused either');
  await h.pool.query('DROP TRIGGER refuse_notice ON webhook_notifications');
  t.equal(await pauseEndpoint(h.services, endpoint.id, 50), true, 'the next pause goes through');
  t.equal(await status(), 'paused');
  t.equal((await notices(h, endpoint.id)).length, 2, 'with its two notices');
  t.equal(await pauseEndpoint(h.services, endpoint.id, 51), false, 'pausing again does nothing');
  t.equal((await notices(h, endpoint.id)).length, 2, 'and writes no second notice');
});

t.test("another workspace's endpoint pausing tells that workspace's owners only", async (t) => {
  const smtp = await TestSmtpServer.start();
  t.teardown(() => smtp.stop());
  const h = await harness(t, { smtpUrl: smtp.url });
  const other = await seedWorkspace(h, {
    users: [{ name: 'Other Owner', email: 'owner@elsewhere.example', role: 'owner', branch: 'DEL' }],
  });
  const endpoint = await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] }, other.live);
  await h.startWorkers({ concurrency: 4 });
  t.equal(await pauseEndpoint(h.services, endpoint.id, 50), true);
  await waitFor(() => smtp.received.length >= 1, 'the other workspace’s owner is told');
  await new Promise((r) => setTimeout(r, 1000));
  t.same(
    smtp.received.map((m) => m.to),
    [['owner@elsewhere.example']],
    'only that workspace’s owner, none of the first workspace’s',
  );
});

t.test('SMTP_URL must be an smtp:// or smtps:// URL, and a bad one is never repeated', async (t) => {
  t.equal(loadConfig({ SMTP_URL: 'smtps://u:pw@mail.example:465' }).smtpUrl, 'smtps://u:pw@mail.example:465');
  t.equal(loadConfig({}).smtpUrl, undefined, 'unset: no mailing');
  for (const bad of ['http://u:hunter2@mail.example', 'not a url hunter2', 'smtp://']) {
    let message = '';
    try {
      loadConfig({ SMTP_URL: bad });
    } catch (error) {
      message = (error as Error).message;
    }
    t.match(message, /^SMTP_URL must be/, `refused: ${bad.replace('hunter2', '…')}`);
    t.notOk(message.includes('hunter2'), 'without repeating the value');
  }
});
