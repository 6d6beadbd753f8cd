import t from 'tap';
import type { AdminApplication } from '../../src/schemas/application.js';
import { projections } from '../../src/projections/index.js';
import { rebuildReadModels } from '../../src/projections/rebuild.js';
import { seedWorkspace } from '../support/app.js';
import { appFixture, fixtureFor, statusFields, STAFF } from './support.js';

const STATUS_KEYS = [
  'case_ref',
  'current_module',
  'id',
  'module',
  'module_progress',
  'modules',
  'outcome',
  'progress',
  'reference',
  'stage',
  'status',
];

t.test('admin credentials are separate from API keys', async (t) => {
  const f = await appFixture(t);
  const leadId = await f.lead();
  t.match(await (await f.admin(`/leads/${leadId}/convert`, { method: 'POST', token: 'wrong' })).json(), {
    error: 'invalid_admin_token',
  });
  const withKey = await f.app.request(`/admin/v1/workspaces/${f.ws.workspace.slug}/leads/${leadId}/convert`, {
    method: 'POST',
    key: f.ws.live,
    headers: { 'x-admin-user': STAFF },
  });
  t.equal(withKey.status, 401, 'an API key is not an admin credential');
  const former = await f.admin(`/leads/${leadId}/convert`, { method: 'POST', user: 'former@northstar.example' });
  t.equal(former.status, 403, 'an inactive user cannot act');
  t.equal((await f.admin(`/leads/${leadId}/convert`, { method: 'POST', workspace: 'no-such-workspace' })).status, 404);
});

t.test('conversion: the lead is converted and locked, lead.converted, the case opens at the first stage', async (t) => {
  const f = await appFixture(t);
  const leadId = await f.lead();
  const view = await f.convert(leadId);
  t.match(view, { lead_id: leadId, sandbox: false, case_ref: 'APP-1', reference: 'APP-1', stage: { key: 'profile' } });
  t.same(
    view.roadmap.map((m) => [m.key, m.selected]),
    [
      ['profile_review', true],
      ['sop', false],
      ['documents', true],
      ['lodgement', true],
      ['biometrics', true],
      ['decision', true],
    ],
  );

  const leadEvents = await f.app.services.store.readStream(`lead-${leadId}`);
  const converted = leadEvents.find((e) => e.type === 'lead.converted');
  t.ok(converted, 'lead.converted is in the lead stream');
  t.match(converted?.metadata.actor, { type: 'user', email: STAFF });

  const events = await f.stream(view.id);
  t.same(
    events.map((e) => e.type),
    ['application.opened', 'application.stage_changed'],
  );
  t.ok(
    events.every((e) => e.metadata.correlation_id === converted?.metadata.correlation_id),
    'one operation, one correlation id',
  );
  const stages = view.stages;
  t.same((events[1]!.data.payload as Record<string, unknown>).stage_change, {
    from_stage_id: null,
    to_stage_id: stages[0]!.id,
    direction: 'initial',
    passed_stage_ids: [stages[0]!.id],
    from_stage_key: null,
    to_stage_key: 'profile',
    from_module: null,
    to_module: { key: 'profile_review', name: 'Profile review' },
  });

  const again = await f.admin(`/leads/${leadId}/convert`, { method: 'POST' });
  t.equal(again.status, 409);
  t.match(await again.json(), { error: 'lead_locked' });
  const noWorkflow = fixtureFor(f.app, await seedWorkspace(f.app, { application_workflow: undefined }));
  const waiting = await noWorkflow.lead();
  const refused = await noWorkflow.admin(`/leads/${waiting}/convert`, { method: 'POST' });
  t.match(
    { status: refused.status, body: await refused.json() },
    { status: 409, body: { error: 'no_application_workflow' } },
    'no stages, no conversion',
  );
  t.notOk(
    (await f.app.services.store.readStream(`lead-${waiting}`)).some((e) => e.type === 'lead.converted'),
    'and the lead stays unconverted',
  );
  const unknown = await f.admin('/leads/0b7e7f6a-1111-4222-8333-444455556666/convert', { method: 'POST' });
  t.equal(unknown.status, 404);
  t.match(await unknown.json(), { error: 'not_found' });

  const lead = await f.app.request(`/v1/leads/${leadId}`, { key: f.ws.live });
  t.equal(lead.status, 200);
  t.match(await lead.json(), { converted: true }, 'the lead reads as converted');
  const patch = await f.app.request(`/v1/leads/${leadId}`, {
    method: 'PATCH',
    key: f.ws.live,
    json: { note: 'after conversion' },
  });
  t.match(
    { status: patch.status, body: await patch.json() },
    { status: 409, body: { error: 'lead_locked' } },
    'and is locked',
  );
});

t.test('staff operations over HTTP: every event kind with its data, as it was at the event', async (t) => {
  const f = await appFixture(t);
  const view = await f.convert(await f.lead());
  const base = `/applications/${view.id}`;
  const ids = Object.fromEntries(view.stages.map((s) => [s.key, s.id]));
  let seen = (await f.stream(view.id)).length;
  /** Runs one admin operation and returns its answer and the events it appended. */
  const op = async (method: string, path: string, json?: unknown) => {
    const response = await f.admin(`${base}${path}`, { method, ...(json !== undefined ? { json } : {}) });
    const body = (await response.json()) as AdminApplication & { error?: string };
    const events = (await f.stream(view.id)).slice(seen);
    seen += events.length;
    return {
      status: response.status,
      body,
      events,
      payloads: events.map((e) => e.data.payload as Record<string, unknown> | undefined),
    };
  };

  // Switch the optional module on.
  let r = await op('POST', '/modules/sop/select');
  t.equal(r.status, 200);
  t.same(
    r.events.map((e) => e.type),
    ['application.module_updated'],
  );
  t.same(r.payloads[0]!.module_event, {
    key: 'sop',
    name: 'Statement of purpose',
    kind: 'selected',
    from_state: 'pending',
    to_state: 'pending',
    selected: true,
  });
  t.same(
    Object.keys(r.payloads[0]!).sort(),
    [...STATUS_KEYS, 'module_event'].sort(),
    'the status fields plus module_event',
  );
  t.same(statusFields(r.payloads[0]!), statusFields(r.body as unknown as Record<string, unknown>));
  t.same(r.payloads[0]!.module_progress, { updated: 0, total: 5 });

  // Completing the stage's module moves the case on: the module event, then the stage change.
  r = await op('PUT', '/modules/profile_review/state', { state: 'updated' });
  t.same(
    r.events.map((e) => e.type),
    ['application.module_updated', 'application.stage_changed'],
  );
  t.same(r.payloads[0]!.module_event, {
    key: 'profile_review',
    name: 'Profile review',
    kind: 'state',
    from_state: 'pending',
    to_state: 'updated',
    selected: true,
  });
  t.match(
    r.payloads[0],
    { stage: { key: 'profile' }, progress: 20 },
    'the module event shows the case before the move',
  );
  t.same(r.payloads[1]!.stage_change, {
    from_stage_id: ids.profile,
    to_stage_id: ids.documents,
    direction: 'forward',
    passed_stage_ids: [ids.documents],
    from_stage_key: 'profile',
    to_stage_key: 'documents',
    from_module: { key: 'profile_review', name: 'Profile review' },
    to_module: { key: 'documents', name: 'Document checklist' },
  });
  t.match(
    r.payloads[1],
    { stage: { key: 'documents' }, module: { key: 'documents' }, current_module: { key: 'sop' } },
    'module and current_module differ',
  );
  t.equal(r.events[1]!.data.cause, 'modules');

  // A custom module placed before sop.
  r = await op('POST', '/modules', { name: 'Bank statements', after: 'profile_review', stage_keys: ['documents'] });
  t.same(r.payloads[0]!.module_event, {
    key: 'custom_bank_statements',
    name: 'Bank statements',
    kind: 'added',
    from_state: null,
    to_state: 'pending',
    selected: true,
  });
  t.same(r.body.current_module, { key: 'custom_bank_statements', name: 'Bank statements' });
  t.equal(r.body.roadmap[1]!.key, 'custom_bank_statements');

  // Saving details is not a module change: nothing delivered (only an internal event).
  r = await op('PATCH', '/modules/custom_bank_statements', {
    name: 'Bank statements (6 months)',
    details: { bank: 'SBI' },
  });
  t.equal(r.status, 200);
  t.same(
    r.events.map((e) => e.type),
    ['application.module_details_saved'],
  );
  t.equal(r.payloads[0], undefined, 'no payload: it is never delivered');
  t.match(r.body.roadmap[1], { name: 'Bank statements (6 months)', details: { bank: 'SBI' } });
  t.same(
    r.body.modules[1],
    { key: 'custom_bank_statements', name: 'Bank statements (6 months)', state: 'pending' },
    'the name as shown on the case',
  );
  r = await op('PATCH', '/modules/custom_bank_statements', { details: { bank: 'SBI' } });
  t.same(r.events, [], 'saving the same details again appends nothing');

  // Deselect and restore.
  r = await op('POST', '/modules/sop/deselect');
  t.same(r.payloads[0]!.module_event, {
    key: 'sop',
    name: 'Statement of purpose',
    kind: 'deselected',
    from_state: 'pending',
    to_state: 'pending',
    selected: false,
  });
  r = await op('POST', '/modules/sop/restore');
  t.same(r.payloads[0]!.module_event, {
    key: 'sop',
    name: 'Statement of purpose',
    kind: 'restored',
    from_state: 'pending',
    to_state: 'pending',
    selected: true,
  });
  r = await op('PUT', '/modules/custom_bank_statements/state', { state: 'pending' });
  t.same(r.events, [], 'marking pending what is pending changes nothing');

  // Staff moves: forward skipping a stage, then backward.
  r = await op('POST', '/stage', { stage: 'decision' });
  t.same(
    r.events.map((e) => e.type),
    ['application.stage_changed'],
  );
  t.same(r.payloads[0]!.stage_change, {
    from_stage_id: ids.documents,
    to_stage_id: ids.decision,
    direction: 'forward',
    passed_stage_ids: [ids.submission, ids.decision],
    from_stage_key: 'documents',
    to_stage_key: 'decision',
    from_module: { key: 'documents', name: 'Document checklist' },
    to_module: { key: 'decision', name: 'Decision' },
  });
  t.equal(r.events[0]!.data.cause, 'manual');
  r = await op('POST', '/stage', { stage: ids.submission });
  t.same(r.payloads[0]!.stage_change, {
    from_stage_id: ids.decision,
    to_stage_id: ids.submission,
    direction: 'backward',
    passed_stage_ids: [],
    from_stage_key: 'decision',
    to_stage_key: 'submission',
    from_module: { key: 'decision', name: 'Decision' },
    to_module: { key: 'lodgement', name: 'Visa lodgement' },
  });
  t.same(Object.keys(r.payloads[0]!).sort(), [...STATUS_KEYS, 'stage_change'].sort());
  r = await op('POST', '/stage', { stage: 'nowhere' });
  t.match(r, { status: 400, body: { error: 'validation_failed' } });

  // Status (internal) and outcome.
  r = await op('POST', '/status', { status: 'on_hold' });
  t.same(
    r.events.map((e) => e.type),
    ['application.status_changed'],
  );
  t.equal(r.body.status, 'on_hold');
  r = await op('POST', '/outcome', { outcome: 'granted' });
  t.same(
    r.events.map((e) => e.type),
    ['application.outcome'],
  );
  t.same(Object.keys(r.payloads[0]!).sort(), STATUS_KEYS, 'the outcome event carries the status fields');
  t.match(r.payloads[0], { outcome: 'granted', status: 'on_hold', stage: { key: 'submission' } });
  r = await op('POST', '/status', { status: 'closed' });
  r = await op('PUT', '/modules/lodgement/state', { state: 'updated' });
  t.match(r, { status: 409, body: { error: 'application_closed' }, events: [] });

  // Refusals.
  await op('POST', '/status', { status: 'active' });
  t.match(await op('PUT', '/modules/nope/state', { state: 'updated' }), {
    status: 404,
    body: { error: 'module_not_found' },
  });
  await op('POST', '/modules/sop/deselect');
  t.match(await op('PUT', '/modules/sop/state', { state: 'updated' }), {
    status: 409,
    body: { error: 'module_not_selected' },
  });
  t.match(await op('POST', '/modules', { name: 'Dup', key: 'documents' }), {
    status: 409,
    body: { error: 'module_exists' },
  });
  t.match(await op('PUT', '/modules/documents/state', { state: 'done' }), {
    status: 400,
    body: { error: 'validation_failed' },
  });

  // Every event carries the staff actor; the events' payloads describe the case at each event, not now.
  const all = await f.stream(view.id);
  t.ok(
    all.every((e) => (e.metadata.actor as { email?: string }).email === STAFF),
    'every event names the staff member',
  );
  const stageEvents = all
    .filter((e) => e.type === 'application.stage_changed')
    .map((e) => (e.data.payload as { stage: { key: string } }).stage.key);
  t.same(stageEvents, ['profile', 'documents', 'decision', 'submission']);

  // The read model equals a replay of the log; the admin GET and the API agree.
  const before = (await (await f.admin(base)).json()) as AdminApplication;
  await rebuildReadModels(f.app.pool, projections, f.app.services.personalData);
  const rebuilt = (await (await f.admin(base)).json()) as AdminApplication;
  t.same(rebuilt, before, 'rebuilding the read model gives the same case');
  const api = await (await f.app.request(`/v1/applications/${view.id}/status`, { key: f.ws.live })).json();
  t.same(api, statusFields(rebuilt as unknown as Record<string, unknown>));
  t.equal((await f.admin(base, { sandbox: true })).status, 404, 'the live case is not in the sandbox');
});
