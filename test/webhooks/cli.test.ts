import t from 'tap';
import { runCli } from '../support/cli.js';
import { resourcePayload, webhookHarness } from './support/harness.js';
import { waitFor } from './support/receiver.js';

t.test('the CLI lists endpoints and deliveries, resends, rotates, tests and resumes', async (t) => {
  const h = await webhookHarness(t);
  const cli = (...args: string[]) => runCli(h.services.config.databaseUrl!, args, { RUN_WORKERS: 'false' });
  const slug = h.ws.workspace.slug;
  const live = await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] });
  const test = await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded'] }, h.ws.test);
  await h.startWorkers();
  const event = await h.appendEvent('document.uploaded', resourcePayload());
  await waitFor(() => h.receiver.forEvent(event.id).length === 1, 'delivered');

  const list = await cli('--json', 'webhook', 'list', slug);
  t.equal(list.code, 0, list.stderr);
  const endpoints = JSON.parse(list.stdout) as { id: string; mode: string }[];
  t.same(
    endpoints.map((e) => [e.id, e.mode]).sort(),
    [
      [live.id, 'live'],
      [test.id, 'test'],
    ].sort(),
    'both modes, no secrets',
  );
  t.notOk(list.stdout.includes('whsec_'));

  const deliveries = await cli('--json', 'webhook', 'deliveries', slug, live.id);
  t.equal(deliveries.code, 0, deliveries.stderr);
  const page = JSON.parse(deliveries.stdout) as {
    data: { id: string; event_id: string; status: string; log: unknown[] }[];
  };
  t.match(page.data, [{ event_id: event.id, status: 'succeeded', log: [{ response_status: 200 }] }]);
  t.match((await cli('webhook', 'deliveries', slug, live.id)).stdout, /succeeded/, 'a human table too');

  const resent = await cli(
    '--json',
    'webhook',
    'resend',
    slug,
    live.id,
    page.data[0]!.id,
    '--as',
    'asha@northstar.example',
  );
  t.equal(resent.code, 0, resent.stderr);
  t.match(JSON.parse(resent.stdout), { event_id: event.id });
  await waitFor(() => h.receiver.forEvent(event.id).length === 2, 'the resend arrives');

  const rotated = await cli('--json', 'webhook', 'rotate-secret', slug, live.id, '--as', 'asha@northstar.example');
  t.equal(rotated.code, 0, rotated.stderr);
  const rotation = JSON.parse(rotated.stdout) as { secret: string; endpoint: { previous_secret_valid_until: string } };
  t.match(rotation.secret, /^whsec_[A-Za-z0-9]{32}$/);
  t.ok(rotation.endpoint.previous_secret_valid_until);

  const tested = await cli('--json', 'webhook', 'test', slug, test.id, '--as', 'asha@northstar.example');
  t.equal(tested.code, 0, tested.stderr);
  const { event_id } = JSON.parse(tested.stdout) as { event_id: string };
  await waitFor(() => h.receiver.forEvent(event_id).length === 1, 'the test event arrives');

  const resumed = await cli('--json', 'webhook', 'resume', slug, live.id, '--as', 'asha@northstar.example');
  t.equal(resumed.code, 0, resumed.stderr);
  t.match(JSON.parse(resumed.stdout), { status: 'active' }, 'resuming an active endpoint changes nothing');

  const stranger = await cli('webhook', 'resume', slug, live.id, '--as', 'nobody@example.org');
  t.equal(stranger.code, 2, 'only active users of the workspace act');
  const missing = await cli(
    'webhook',
    'test',
    slug,
    '00000000-0000-4000-8000-000000000000',
    '--as',
    'asha@northstar.example',
  );
  t.equal(missing.code, 2);
  t.match(missing.stderr, /No webhook endpoint/);
  const history = await h.pool.query<{ type: string; actor: { email?: string } }>(
    "SELECT type, metadata->'actor' AS actor FROM events WHERE stream_id = $1 ORDER BY revision",
    [`webhook-endpoint-${live.id}`],
  );
  t.same(
    history.rows.map((r) => [r.type, r.actor.email ?? null]),
    [
      ['webhook_endpoint.created', null],
      ['webhook_endpoint.secret_rotated', 'asha@northstar.example'],
    ],
    'the staff member is recorded as the actor',
  );
});

t.test('the CLI replays a window of an endpoint’s events, and refuses what the API refuses', async (t) => {
  const h = await webhookHarness(t);
  const cli = (...args: string[]) => runCli(h.services.config.databaseUrl!, args, { RUN_WORKERS: 'false' });
  const slug = h.ws.workspace.slug;
  const live = await h.createEndpoint({ url: h.receiver.url(), events: ['document.uploaded', 'document.rejected'] });
  await h.startWorkers();
  const since = new Date(Date.now() - 1000).toISOString();
  const uploaded = await h.appendEvent('document.uploaded', resourcePayload());
  const rejected = await h.appendEvent('document.rejected', resourcePayload());
  await waitFor(
    () => h.receiver.forEvent(rejected.id).length === 1 && h.receiver.forEvent(uploaded.id).length === 1,
    'delivered',
  );

  const replayed = await cli(
    '--json',
    'webhook',
    'replay',
    slug,
    live.id,
    '--since',
    since,
    '--kinds',
    'document.rejected',
    '--as',
    'asha@northstar.example',
  );
  t.equal(replayed.code, 0, replayed.stderr);
  t.match(JSON.parse(replayed.stdout), { endpoint_id: live.id, queued: 1, kinds: ['document.rejected'] });
  await waitFor(() => h.receiver.forEvent(rejected.id).length === 2, 'the replayed event arrives again');
  t.equal(h.receiver.forEvent(uploaded.id).length, 1, 'the other kind is not replayed');
  const recorded = await h.pool.query<{ actor: { email?: string } }>(
    'SELECT actor FROM webhook_replays WHERE endpoint_id = $1',
    [live.id],
  );
  t.equal(recorded.rows[0]?.actor.email, 'asha@northstar.example', 'the member is recorded as the actor');

  const old = await cli(
    'webhook',
    'replay',
    slug,
    live.id,
    '--since',
    new Date(Date.now() - 40 * 86_400_000).toISOString(),
    '--as',
    'asha@northstar.example',
  );
  t.equal(old.code, 2, 'more than 30 days back is refused');
  t.match(old.stderr, /validation_failed.*since/);
  const garbled = await cli(
    'webhook',
    'replay',
    slug,
    live.id,
    '--since',
    'last week',
    '--as',
    'asha@northstar.example',
  );
  t.equal(garbled.code, 2);
  t.match(garbled.stderr, /since/);
  const stranger = await cli('webhook', 'replay', slug, live.id, '--since', since, '--as', 'nobody@example.org');
  t.equal(stranger.code, 2, 'only active members the table allows');

  const admin = await h.admin('POST', `/webhooks/${live.id}/replay`, { since, only_failed: true });
  t.equal(admin.status, 202, 'the admin interface replays too');
  t.match(await admin.json(), { endpoint_id: live.id, only_failed: true, queued: 0 }, 'nothing failed: none queued');
  const badAdmin = await h.admin('POST', `/webhooks/${live.id}/replay`, { since, kinds: ['lead.created'] });
  t.equal(badAdmin.status, 400);
  t.match(await badAdmin.json(), { error: 'validation_failed', fields: { kinds: String } });
});
