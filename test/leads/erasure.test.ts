import { createServices } from '../../src/bootstrap.js';
import { captureLead } from '../../src/commands/leads/capture-lead.js';
import { PostgresEventStore } from '../../src/events/postgres-event-store.js';
import { findKeyByValue } from '../../src/keys/repository.js';
import { normaliseSubmission } from '../../src/domain/leads/submission.js';
import t from 'tap';
import { projections } from '../../src/projections/index.js';
import { rebuildReadModels } from '../../src/projections/rebuild.js';
import { verifyChains } from '../../src/events/verify-chain.js';
import { seedWorkspace } from '../support/app.js';
import { runCli, runCliJson } from '../support/cli.js';
import { webhookHarness, type Harness } from '../webhooks/support/harness.js';
import { searchEverywhere } from '../support/search-everywhere.js';
import { waitFor } from '../webhooks/support/receiver.js';

// Erasure (crypto-shredding): after a lead's person is erased, nothing personal of theirs can be found anywhere in
// the database or read back through the log, the read models, history, webhooks or a resend; the chains still verify.

/** The person to erase: every value distinctive, so finding any of them anywhere means it leaked. */
const MEERA = {
  full_name: 'Meera Erasable-Kaur',
  phone: '+91 98123 45678',
  email: 'meera.erasable@example.org',
  city: 'Ludhianaville',
  date_of_birth: '1999-04-12',
  message: 'Reach me at home after six',
  consent: true,
};
const NOTE = 'Spoke with Meera about her sister';
const DETAILS = { passport: 'PassportZ9876543', address: '12 Erasable Lane' };
/** What must never be found after the erasure (the phone as stored: E.164). */
const NEEDLES = [
  '9812345678',
  'meera.erasable',
  'Erasable-Kaur',
  'Ludhianaville',
  '1999-04-12',
  'Reach me at home',
  'about her sister',
  'PassportZ9876543',
  '12 Erasable Lane',
];

/** A different person in the same workspace, and one in another workspace: neither may be touched. */
const RAVI = { full_name: 'Ravi Keepme', phone: '+91 97000 11122', email: 'ravi.keepme@example.org', consent: true };
const OTHER = { full_name: 'Omar Otherws', phone: '+91 96000 33344', email: 'omar.otherws@example.org', consent: true };

async function createLead(h: Harness, key: string, body: Record<string, unknown>, idempotencyKey?: string) {
  const response = await h.request('/v1/leads', {
    method: 'POST',
    key,
    json: body,
    ...(idempotencyKey ? { headers: { 'idempotency-key': idempotencyKey } } : {}),
  });
  if (response.status !== 201) throw new Error(`POST /v1/leads answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { id: string }).id;
}

async function getLead(h: Harness, key: string, id: string): Promise<Record<string, unknown>> {
  const response = await h.request(`/v1/leads/${id}`, { key });
  if (response.status !== 200) throw new Error(`GET lead answered ${response.status}`);
  return (await response.json()) as Record<string, unknown>;
}

const mentions = (text: string) => NEEDLES.filter((n) => text.toLowerCase().includes(n.toLowerCase()));

t.test('an erased person can be found nowhere; the log still verifies; others are untouched', async (t) => {
  const h = await webhookHarness(t);
  const endpoint = await h.createEndpoint({ url: h.receiver.url(), events: ['lead.created', 'lead.updated'] });
  await h.startWorkers();
  const other = await seedWorkspace(h);

  const meera = await createLead(h, h.ws.live, MEERA, 'meera-first-try');
  const ravi = await createLead(h, h.ws.live, RAVI);
  const omar = await createLead(h, other.live, OTHER);
  // A second enquiry by the same person (a duplicate), a note and a change, then a case with personal details.
  const duplicate = await h.request('/v1/leads', {
    method: 'POST',
    key: h.ws.live,
    json: { ...MEERA, message: 'Reach me at home on Sunday' },
  });
  t.equal(duplicate.status, 200, 'the second enquiry is a duplicate');
  const patch = await h.request(`/v1/leads/${meera}`, {
    method: 'PATCH',
    key: h.ws.live,
    json: { note: NOTE, temperature: 'hot' },
  });
  t.equal(patch.status, 200);
  const converted = await h.admin('POST', `/leads/${meera}/convert`);
  t.equal(converted.status, 201);
  const application = ((await converted.json()) as { id: string }).id;
  const saved = await h.admin('PATCH', `/applications/${application}/modules/sop`, { details: DETAILS });
  t.equal(saved.status, 200, 'module details saved');

  const meeraEvents = await h.services.store.readStream(`lead-${meera}`);
  const created = meeraEvents[0]!;
  await waitFor(() => h.receiver.forEvent(created.id).length === 1, "Meera's lead.created is delivered");
  t.ok(mentions(h.receiver.forEvent(created.id)[0]!.body).length > 0, 'it carried her data (before the erasure)');
  const ravisBefore = await getLead(h, h.ws.live, ravi);
  const omarBefore = await getLead(h, other.live, omar);
  const beforeErasure = new Date().toISOString();

  const before = await searchEverywhere(h.pool, NEEDLES);
  t.same(
    before.filter((hit) => hit.table === 'events'),
    [],
    'even before the erasure the event log holds no personal value in the clear',
  );
  t.ok(
    before.some((hit) => hit.table === 'leads') && before.some((hit) => hit.table === 'webhook_deliveries'),
    'the search finds what is there: the read model and the delivery log hold her data before the erasure',
  );

  const erase = await h.admin('POST', `/leads/${meera}/erase`);
  t.equal(erase.status, 200);
  const erasure = (await erase.json()) as Record<string, unknown>;
  t.match(erasure, { lead_id: meera, erased_now: true, streams: 2, plaintext_events: 0 });
  const again = await h.admin('POST', `/leads/${meera}/erase`);
  t.same(
    await again.json(),
    { ...erasure, erased_now: false, streams: 0 },
    'erasing again does nothing and answers the first erasure',
  );

  // The erasure's own webhook: lead.updated naming the erased fields, carrying nothing personal.
  const afterEvents = await h.services.store.readStream(`lead-${meera}`);
  const erasedEvent = afterEvents.at(-1)!;
  t.equal(erasedEvent.type, 'lead.updated');
  await waitFor(() => h.receiver.forEvent(erasedEvent.id).length === 1, 'the erasure is announced');
  const announced = JSON.parse(h.receiver.forEvent(erasedEvent.id)[0]!.body) as {
    event: string;
    data: Record<string, unknown>;
  };
  t.equal(announced.event, 'lead.updated');
  t.match(announced.data, {
    id: meera,
    full_name: '',
    phone: null,
    email: null,
    city: null,
    date_of_birth: null,
    custom_fields: {},
    converted: true,
  });
  t.same(
    (announced.data.changed_fields as string[]).sort(),
    ['city', 'date_of_birth', 'email', 'full_name', 'phone'],
    'changed_fields names what was erased',
  );

  // A resend of the earlier lead.created delivery sends the erased body.
  const delivery = await h.pool.query<{ id: string }>(
    'SELECT id FROM webhook_deliveries WHERE event_id = $1 AND resend_of IS NULL',
    [created.id],
  );
  const resend = await h.admin('POST', `/webhooks/${endpoint.id}/deliveries/${delivery.rows[0]!.id}/resend`);
  t.equal(resend.status, 201);
  await waitFor(() => h.receiver.forEvent(created.id).length === 2, 'the resend arrives');
  t.same(mentions(h.receiver.forEvent(created.id)[1]!.body), [], 'the resend carries no personal value');

  // The whole database.
  t.same(await searchEverywhere(h.pool, NEEDLES), [], 'no table holds any of her values after the erasure');

  // Read back through every door.
  const lead = await getLead(h, h.ws.live, meera);
  t.match(lead, { id: meera, full_name: '', phone: null, email: null, alt_phone: null, city: null, converted: true });
  const list = (await (await h.request('/v1/leads?limit=100', { key: h.ws.live })).json()) as {
    data: { id: string }[];
  };
  t.ok(
    list.data.some((l) => l.id === meera),
    'the erased lead is still listed',
  );
  const history = await h.admin('GET', `/leads/${meera}/history?limit=100`);
  t.equal(history.status, 200);
  t.same(mentions(await history.text()), [], 'its history shows nothing personal');
  const asOf = await h.admin('GET', `/leads/${meera}/state?as_of=${encodeURIComponent(beforeErasure)}`);
  t.equal(asOf.status, 200);
  const pastState = await asOf.text();
  t.same(mentions(pastState), [], 'its state before the erasure shows nothing personal either');
  t.match(JSON.parse(pastState), { lead: { full_name: '', temperature: 'hot' } }, 'but what is not personal is kept');
  const caseHistory = await h.admin('GET', `/applications/${application}/history?limit=100`);
  t.same(mentions(await caseHistory.text()), [], "the application's history neither");
  const caseView = await h.admin('GET', `/applications/${application}`);
  t.same(mentions(await caseView.text()), [], 'nor the application');

  // The log is intact, and the read models rebuilt from it show the same erased lead.
  const verified = await verifyChains(h.pool, h.ws.workspace.id);
  t.equal(verified.broken, null, 'every hash chain still verifies');
  const cli = await runCli(h.services.config.databaseUrl!, ['audit', 'verify', h.ws.workspace.slug]);
  t.equal(cli.code, 0, `visa-crm audit verify passes: ${cli.stdout}${cli.stderr}`);
  await rebuildReadModels(h.pool, projections, h.services.personalData);
  t.same(await getLead(h, h.ws.live, meera), lead, 'rebuilt from the log: the same erased lead');
  t.same(await getLead(h, h.ws.live, ravi), ravisBefore, 'the other person of the workspace is untouched');
  t.same(await getLead(h, other.live, omar), omarBefore, 'the person of the other workspace is untouched');
  t.same(await searchEverywhere(h.pool, NEEDLES), [], 'and still nothing of her anywhere after the rebuild');

  // Nothing personal can be added to an erased lead.
  const lateNote = await h.request(`/v1/leads/${ravi}`, { method: 'PATCH', key: h.ws.live, json: { note: 'ok' } });
  t.equal(lateNote.status, 200, 'another lead takes notes as before');
});

t.test('an erased lead keeps taking changes that say nothing personal, and refuses personal ones', async (t) => {
  const h = await webhookHarness(t);
  const id = await createLead(h, h.ws.live, MEERA);
  t.equal((await h.admin('POST', `/leads/${id}/erase`)).status, 200);
  const stage = await h.request(`/v1/leads/${id}`, { method: 'PATCH', key: h.ws.live, json: { temperature: 'cold' } });
  t.equal(stage.status, 200, 'a change of temperature is taken');
  t.match(await stage.json(), { full_name: '', temperature: 'cold' });
  const note = await h.request(`/v1/leads/${id}`, { method: 'PATCH', key: h.ws.live, json: { note: NOTE } });
  t.equal(note.status, 409, 'a note is refused');
  t.match(await note.json(), { error: 'lead_erased' });
  // The same person can come back as a new lead: the erased one no longer holds their phone or email.
  const back = await h.request('/v1/leads', { method: 'POST', key: h.ws.live, json: MEERA });
  t.equal(back.status, 201, 'a new enquiry by the same person is a new lead');
  t.not(((await back.json()) as { id: string }).id, id);
  // A case opened from the erased lead gets a key of its own; erasing again deletes it.
  const converted = await h.admin('POST', `/leads/${id}/convert`);
  t.equal(converted.status, 201, 'an erased lead can still be converted');
  const application = ((await converted.json()) as { id: string }).id;
  await h.admin('PATCH', `/applications/${application}/modules/sop`, { details: DETAILS });
  const again = await h.admin('POST', `/leads/${id}/erase`);
  t.match(await again.json(), { erased_now: false, streams: 1 }, "erasing again deletes the case's key");
  const caseView = await h.admin('GET', `/applications/${application}`);
  t.same(mentions(await caseView.text()), [], 'and scrubs its details');
  const [opened] = await h.services.store.readStream(`application-${application}`);
  t.equal(opened!.type, 'application.opened');
  t.same(mentions(JSON.stringify(await h.services.store.readStream(`application-${application}`))), []);
  const missing = await h.admin('POST', `/leads/00000000-0000-4000-8000-000000000000/erase`);
  t.equal(missing.status, 404);
  t.match(await missing.json(), { error: 'not_found' });
});

t.test('another process that read the person before the erasure reads them erased after it', async (t) => {
  const h = await webhookHarness(t);
  const id = await createLead(h, h.ws.live, MEERA);
  // A second service (another process) on the same database, its own key cache warmed by reading the lead.
  const second = await createServices(h.services.config, {
    pool: h.pool,
    url: h.services.config.databaseUrl!,
    kind: 'external',
    close: async () => undefined,
  });
  t.teardown(async () => {
    await second.rateLimits.close();
    await second.keys.close();
  });
  const [before] = await second.store.readStream(`lead-${id}`);
  t.match(before!.data, { payload: { full_name: MEERA.full_name } }, 'it reads her name before');
  t.equal((await h.admin('POST', `/leads/${id}/erase`)).status, 200);
  const [after] = await second.store.readStream(`lead-${id}`);
  t.match(after!.data, { payload: { full_name: '', email: null } }, 'and nothing of her after, whatever it cached');
});

t.test('visa-crm lead erase erases, names what it did, and is idempotent', async (t) => {
  const h = await webhookHarness(t);
  const id = await createLead(h, h.ws.live, MEERA);
  const url = h.services.config.databaseUrl!;
  const args = ['lead', 'erase', h.ws.workspace.slug, id, '--as', 'asha@northstar.example'];
  const first = await runCliJson<Record<string, unknown>>(url, args);
  t.match(first, { lead_id: id, erased_now: true, streams: 1 });
  const human = await runCli(url, args);
  t.equal(human.code, 0);
  t.match(human.stdout, /already erased at/);
  t.same(mentions(JSON.stringify(await getLead(h, h.ws.live, id))), []);
});

t.test('a lead written before encryption still reads, and erasing it says what stays in the log', async (t) => {
  const h = await webhookHarness(t);
  // The service as it was before: an event store that seals nothing.
  const legacy = { ...h.services, store: new PostgresEventStore(h.pool, projections) };
  const key = (await findKeyByValue(h.pool, h.ws.live))!;
  const workspace = (await h.services.workspaces.get(h.ws.workspace.id, key.workspace_revision))!;
  const problems: Record<string, string> = {};
  const submission = normaliseSubmission(MEERA, workspace.settings, h.services.now(), problems);
  t.same(problems, {});
  const answer = await captureLead(legacy, {
    workspace,
    key,
    submission,
    idempotency: null,
    captcha: null,
    context: (at) => ({
      tenantId: workspace.id,
      sandbox: false,
      metadata: { actor: { type: 'key', key_id: key.id }, correlation_id: 'legacy' },
      now: at,
    }),
    now: h.services.now,
  });
  const id = (answer.body as { id: string }).id;
  const [created] = await h.services.store.readStream(`lead-${id}`);
  t.match(created!.data, { payload: { full_name: MEERA.full_name } }, 'the plaintext event reads as it was written');
  const erase = await h.admin('POST', `/leads/${id}/erase`);
  t.match(await erase.json(), { erased_now: true, plaintext_events: 1 }, 'the answer counts the plaintext event');
  t.match(await getLead(h, h.ws.live, id), { full_name: '', phone: null, email: null }, 'the read model is erased');
  const hits = await searchEverywhere(h.pool, NEEDLES);
  t.same(
    [...new Set(hits.map((hit) => hit.table))],
    ['events'],
    'what stays is in the log alone (as docs/decisions.md says), nowhere else',
  );
  t.equal((await verifyChains(h.pool, h.ws.workspace.id)).broken, null, 'and the chains verify');
});
