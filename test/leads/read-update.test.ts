import { randomUUID } from 'node:crypto';
import t from 'tap';
import { markLeadConverted } from '../../src/commands/leads/convert-lead.js';
import { runCommand, staffContext } from '../../src/commands/run-command.js';
import { NotFoundError } from '../../src/commands/errors.js';
import { LeadRefusal } from '../../src/domain/leads/refusal.js';
import type { Lead } from '../../src/domain/leads/lead.js';
import { seedWorkspace, TestClock } from '../support/app.js';
import { LEAD_FIELDS, leadBody, leadsFixture, streamTypes, type LeadsFixture } from './helpers.js';

async function newLead(f: LeadsFixture, extra: Record<string, unknown> = {}, key = f.live): Promise<string> {
  const res = await f.post(leadBody(extra), { key });
  if (res.status !== 201) throw new Error(`create answered ${res.status}`);
  return String(res.body.id);
}

const lastEvent = async (f: LeadsFixture, id: string) => (await f.services.store.readStream(`lead-${id}`)).at(-1)!;

t.test('GET /v1/leads/{id}: the Lead shape; other workspaces and modes see 404', async (t) => {
  const f = await leadsFixture(t);
  const id = await newLead(f);
  const res = await f.get(`/v1/leads/${id}`);
  t.equal(res.status, 200);
  t.same(Object.keys(res.body), [...LEAD_FIELDS], 'every field, in order, no others');
  t.ok(res.headers.get('ratelimit-limit'), 'rate-limit headers');
  t.equal((await f.get(`/v1/leads/${id}`, f.test)).status, 404, 'the test key does not see live leads');
  const other = await seedWorkspace(f);
  const foreign = await f.get(`/v1/leads/${id}`, other.live);
  t.equal(foreign.status, 404);
  t.equal(foreign.body.error, 'not_found');
  t.equal((await f.get(`/v1/leads/${randomUUID()}`)).status, 404);
  const malformed = await f.get('/v1/leads/not-a-uuid');
  t.equal(malformed.status, 404, 'an id that is not a uuid names no lead');
  t.equal(malformed.body.error, 'not_found');
  t.equal((await f.patch('not-a-uuid', { temperature: 'hot' })).status, 404, 'nor can it be patched');
  t.equal((await f.get('/v1/leads/not-a-uuid', 'vcrm_live_nonsense')).status, 401, 'the key is checked first');
  const noScope = await f.key({ scopes: ['leads:create'] });
  t.match((await f.get(`/v1/leads/${id}`, noScope.value)).body, {
    error: 'insufficient_scope',
    required: 'leads:read',
  });
  t.equal((await f.patch(id, { temperature: 'hot' }, other.live)).status, 404, 'nor can they patch it');
});

t.test('PATCH stage moves, lost reasons and their events', async (t) => {
  const clock = new TestClock();
  const f = await leadsFixture(t, { now: clock.now });
  const id = await newLead(f);
  clock.advance(1000);

  const moved = await f.patch(id, { stage_key: 'qualified' });
  t.equal(moved.status, 200);
  t.match(moved.body, {
    stage: { key: 'qualified', name: 'Qualified' },
    stage_changed_at: clock.now().toISOString(),
    updated_at: clock.now().toISOString(),
  });
  t.same(Object.keys(moved.body), [...LEAD_FIELDS]);
  let event = await lastEvent(f, id);
  t.equal(event.type, 'lead.updated');
  t.same(
    event.data.payload,
    { ...moved.body, changed_fields: ['stage', 'stage_changed_at'] },
    'lead.updated carries the Lead and changed_fields',
  );
  t.same((await f.get(`/v1/leads/${id}`)).body, moved.body, 'the read model agrees');

  t.equal((await f.patch(id, { stage_key: 'new' })).status, 200, 'moves backwards are allowed');

  const converted = await f.patch(id, { stage_key: 'converted' });
  t.equal(converted.status, 409);
  t.equal(converted.body.error, 'stage_requires_conversion');
  const unknown = await f.patch(id, { stage_key: 'nowhere' });
  t.match(unknown.body, { error: 'validation_failed', fields: { stage_key: /not a stage/ } });
  const badPattern = await f.patch(id, { stage_key: 'Bad-Key' });
  t.match(badPattern.body, { error: 'validation_failed', fields: { stage_key: /pattern/ } });

  const noReason = await f.patch(id, { stage_key: 'lost' });
  t.equal(noReason.status, 400);
  t.equal(noReason.body.error, 'lost_reason_required');
  t.equal((await f.patch(id, { stage_key: 'lost', lost_reason_key: null })).body.error, 'lost_reason_required');
  t.match((await f.patch(id, { stage_key: 'lost', lost_reason_key: 'bored' })).body, {
    error: 'validation_failed',
    fields: { lost_reason_key: /not a lost reason/ },
  });
  t.match(
    (await f.patch(id, { lost_reason_key: 'not_eligible' })).body,
    { error: 'validation_failed', fields: { lost_reason_key: /lost stage/ } },
    'a reason without the lost stage',
  );

  clock.advance(1000);
  const lost = await f.patch(id, { stage_key: 'lost', lost_reason_key: 'not_reachable', temperature: 'cold' });
  t.equal(lost.status, 200);
  t.match(lost.body, {
    stage: { key: 'lost' },
    lost_reason: { key: 'not_reachable', name: 'Not reachable' },
    temperature: 'cold',
  });
  const types = await streamTypes(f, id);
  t.same(types.slice(-2), ['lead.updated', 'lead.lost'], 'the temperature is a lead.updated, the move a lead.lost');
  event = await lastEvent(f, id);
  t.same(event.data.payload, lost.body, 'lead.lost carries the Lead as it ends');

  const reason = await f.patch(id, { lost_reason_key: 'not_eligible' });
  t.match(reason.body, { lost_reason: { key: 'not_eligible' } }, 'a lost lead may change its reason');
  t.same((await lastEvent(f, id)).data.payload, { ...reason.body, changed_fields: ['lost_reason'] });

  clock.advance(1000);
  const reopened = await f.patch(id, { stage_key: 'contacted' });
  t.match(
    reopened.body,
    { stage: { key: 'contacted' }, lost_reason: null },
    'a lost lead can be reopened; its reason goes',
  );
  t.same((await lastEvent(f, id)).data.payload, {
    ...reopened.body,
    changed_fields: ['stage', 'lost_reason', 'stage_changed_at'],
  });
});

t.test('PATCH owner, fields, custom fields and notes', async (t) => {
  const f = await leadsFixture(t);
  const id = await newLead(f); // Delhi branch (first branch): counsellor Vikram
  const before = (await f.get(`/v1/leads/${id}`)).body;
  t.match(before, { branch: { code: 'DEL' }, owner: { email: 'vikram@northstar.example' } });

  const assigned = await f.patch(id, { owner_email: 'Asha@Northstar.example' });
  t.equal(assigned.status, 200);
  t.match(assigned.body.owner, { email: 'asha@northstar.example', name: 'Asha Rao' });
  let event = await lastEvent(f, id);
  t.equal(event.type, 'lead.assigned');
  t.same(event.data.payload, assigned.body);
  t.match(event.data.previous_owner, { email: 'vikram@northstar.example' });

  t.match(
    (await f.patch(id, { owner_email: 'former@northstar.example' })).body,
    { error: 'validation_failed', fields: { owner_email: /active user/ } },
    'an inactive user',
  );
  t.match(
    (await f.patch(id, { owner_email: 'meera@northstar.example' })).body,
    { fields: { owner_email: /branch DEL/ } },
    "another branch's user",
  );
  t.match((await f.patch(id, { owner_email: 'nobody@northstar.example' })).body, {
    fields: { owner_email: /active user/ },
  });
  t.match((await f.patch(id, { owner_email: 'not an email' })).body, { fields: { owner_email: /format/ } });
  const unassigned = await f.patch(id, { owner_email: null });
  t.equal(unassigned.body.owner, null, 'null unassigns');
  t.equal((await lastEvent(f, id)).type, 'lead.assigned');

  const fields = await f.patch(id, {
    temperature: 'hot',
    next_follow_up_at: '2026-12-01T09:30:00+05:30',
    custom_fields: { budget_lakhs: 30, preferred_callback: 'morning' },
  });
  t.match(fields.body, {
    temperature: 'hot',
    next_follow_up_at: '2026-12-01T04:00:00.000Z',
    custom_fields: { budget_lakhs: 30, preferred_callback: 'morning' },
  });
  event = await lastEvent(f, id);
  t.same(event.data.changed_fields ?? (event.data.payload as Record<string, unknown>).changed_fields, [
    'temperature',
    'next_follow_up_at',
    'custom_fields',
  ]);

  const merged = await f.patch(id, { custom_fields: { preferred_callback: null, has_offer_letter: true } });
  t.same(merged.body.custom_fields, { budget_lakhs: 30, has_offer_letter: true }, 'merged per key; null removes');
  const badCustom = await f.patch(id, {
    custom_fields: { preferred_callback: 'noon', has_offer_letter: 'yes', budget_lakhs: '5', mystery: 1 },
  });
  t.match(badCustom.body, {
    error: 'validation_failed',
    fields: {
      'custom_fields.preferred_callback': /morning, evening/,
      'custom_fields.has_offer_letter': /true or false/,
      'custom_fields.budget_lakhs': /number/,
      'custom_fields.mystery': /not a custom field/,
    },
  });

  const eventsBefore = (await streamTypes(f, id)).length;
  const same = await f.patch(id, { temperature: 'hot' });
  t.equal(same.status, 200);
  t.equal((await streamTypes(f, id)).length, eventsBefore, 'a patch that changes nothing appends nothing');
  t.equal((await f.patch(id, {})).status, 200, 'an empty patch is fine');

  const noted = await f.patch(id, { note: 'Called, will send documents' });
  t.equal(noted.status, 200);
  event = await lastEvent(f, id);
  t.equal(event.type, 'lead.note_added');
  t.match(event.data, { note: 'Called, will send documents', author: { type: 'key', key_id: /^[0-9a-f-]{36}$/ } });
  t.notOk('payload' in event.data, 'notes are internal timeline entries');
  t.equal(noted.body.last_activity_at, event.createdAt.toISOString());

  for (const [body, field] of [
    [{ note: '' }, 'note'],
    [{ note: 'x'.repeat(5001) }, 'note'],
    [{ temperature: 'tepid' }, 'temperature'],
    [{ next_follow_up_at: 'tomorrow' }, 'next_follow_up_at'],
    [{ colour: 'red' }, 'colour'],
  ] as const) {
    const res = await f.patch(id, body);
    t.equal(res.status, 400, JSON.stringify(body));
    t.ok((res.body.fields as Record<string, string>)[field], `${field} named`);
  }
  t.equal((await f.patch(id, { note: 'n'.repeat(5000) })).status, 200);
  t.equal((await f.patch(randomUUID(), { note: 'x' })).status, 404);
  const readOnly = await f.key({ scopes: ['leads:read'] });
  t.match((await f.patch(id, { note: 'x' }, readOnly.value)).body, {
    error: 'insufficient_scope',
    required: 'leads:update',
  });
});

t.test('a converted lead is locked', async (t) => {
  const f = await leadsFixture(t);
  const id = await newLead(f);
  const ctx = staffContext(f.workspace.id, false, { type: 'system', name: 'test' }, new Date());
  const application = { id: randomUUID(), case_ref: 'APP-1001' };
  await runCommand(f.services.store, ctx, [`lead-${id}`], (tx) => markLeadConverted(tx, f.workspace, id, application));
  const lead = (await f.get(`/v1/leads/${id}`)).body;
  t.match(lead, { converted: true, stage: { key: 'converted', name: 'Converted' } });
  const event = await lastEvent(f, id);
  t.equal(event.type, 'lead.converted');
  t.same(event.data.payload, lead);
  t.same(event.data.application, application);

  for (const body of [{ temperature: 'hot' }, { note: 'hello' }, { stage_key: 'new' }]) {
    const res = await f.patch(id, body);
    t.equal(res.status, 409);
    t.equal(res.body.error, 'lead_locked');
  }
  await t.rejects(
    runCommand(f.services.store, ctx, [`lead-${id}`], (tx) => markLeadConverted(tx, f.workspace, id, application)),
    new LeadRefusal('conflict', 'lead_locked', 'This lead was already converted to an application'),
    'converting twice is refused',
  );
  const sandboxCtx = staffContext(f.workspace.id, true, { type: 'system', name: 'test' }, new Date());
  await t.rejects(
    runCommand(f.services.store, sandboxCtx, [`lead-${id}`], (tx) =>
      markLeadConverted(tx, f.workspace, id, application),
    ),
    new NotFoundError('lead'),
    'a live lead is not found from the sandbox',
  );
  const dup = await f.post({ full_name: 'again', email: lead.email, consent: true });
  t.same(dup.body, { id, duplicate: true }, 'a converted lead still collects enquiries');
});

t.test('concurrent PATCHes of one lead lose no update', async (t) => {
  const f = await leadsFixture(t);
  const id = await newLead(f);
  const patches: Record<string, unknown>[] = [
    { custom_fields: { budget_lakhs: 12 } },
    { custom_fields: { preferred_callback: 'evening' } },
    { custom_fields: { has_offer_letter: true } },
    { temperature: 'warm' },
    { next_follow_up_at: '2027-01-05T10:00:00Z' },
    { owner_email: 'asha@northstar.example' },
    ...Array.from({ length: 24 }, (_, i) => ({ note: `note ${i}` })),
  ];
  const results = await Promise.all(patches.map((p) => f.patch(id, p)));
  t.ok(
    results.every((r) => r.status === 200),
    'every patch succeeded',
  );
  const lead = (await f.get(`/v1/leads/${id}`)).body;
  t.same(
    lead.custom_fields,
    { budget_lakhs: 12, preferred_callback: 'evening', has_offer_letter: true },
    'every custom field merge kept',
  );
  t.match(lead, {
    temperature: 'warm',
    next_follow_up_at: '2027-01-05T10:00:00.000Z',
    owner: { email: 'asha@northstar.example' },
  });
  const events = await f.services.store.readStream(`lead-${id}`);
  t.equal(events.filter((e) => e.type === 'lead.note_added').length, 24, 'every note on the timeline');
  t.same(
    events.map((e) => e.revision),
    events.map((_, i) => i),
    'revisions without gaps',
  );
  const row = await f.pool.query('SELECT revision FROM leads WHERE id = $1', [id]);
  t.equal(row.rows[0].revision, events.length - 1, 'the read model is at the last revision');
});

t.test('rebuilding the read model gives the same rows', async (t) => {
  const f = await leadsFixture(t);
  const id = await newLead(f);
  await f.patch(id, { stage_key: 'lost', lost_reason_key: 'not_eligible', note: 'n' });
  await f.post(leadBody({ email: (await f.get(`/v1/leads/${id}`)).body.email }));
  await newLead(f, {}, f.test);
  const before = await f.pool.query('SELECT * FROM leads ORDER BY id');
  const { rebuildReadModels } = await import('../../src/projections/rebuild.js');
  const { projections } = await import('../../src/projections/index.js');
  await rebuildReadModels(f.pool, projections, f.services.personalData);
  const after = await f.pool.query('SELECT * FROM leads ORDER BY id');
  t.same(after.rows, before.rows);
});

t.test('leads seeded one second apart through the capture command: listed in order, replayed the same', async (t) => {
  const clock = new TestClock(new Date(Date.UTC(2026, 9, 1, 0, 0, 0)));
  const f = await leadsFixture(t, { now: clock.now });
  const leads: Lead[] = [];
  for (let i = 0; i < 50; i++) {
    const created = await f.post(leadBody({ city: i % 2 ? 'Bengaluru' : null }));
    leads.push((await f.get(`/v1/leads/${String(created.body.id)}`)).body as unknown as Lead);
    clock.advance(1000);
  }
  t.equal(leads.length, 50);
  const listed = (await f.get('/v1/leads?limit=100')).body.data as Record<string, unknown>[];
  t.same(
    listed.map((l) => l.id),
    leads.map((l) => l.id),
    'listed in updated_at order',
  );
  t.same(listed[7], leads[7], 'the API shows the imported Lead');
  const before = await f.pool.query('SELECT * FROM leads ORDER BY id');
  const { rebuildReadModels } = await import('../../src/projections/rebuild.js');
  const { projections } = await import('../../src/projections/index.js');
  await rebuildReadModels(f.pool, projections, f.services.personalData);
  t.same(
    (await f.pool.query('SELECT * FROM leads ORDER BY id')).rows,
    before.rows,
    'replaying the imported events gives the same rows',
  );
  const again = await f.post({ full_name: 'x', email: leads[3]!.email, consent: true });
  t.same(again.body, { id: leads[3]!.id, duplicate: true }, 'imported people are found as duplicates');
});
