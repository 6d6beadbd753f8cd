import t from 'tap';
import { deciderSpec, onExisting } from '../support/decider-spec.js';
import {
  ApplicationRefusal,
  applicationStatus,
  decide,
  evolve,
  fold,
  decideOpen,
  progressPercent,
  type ApplicationCommand,
  type ApplicationEvent,
  type ApplicationModuleUpdated,
  type ApplicationStageChanged,
  type ApplicationState,
  type WorkflowInput,
} from '../../src/domain/applications/index.js';

const STAGE_IDS = {
  profile: '00000000-0000-4000-8000-000000000001',
  documents: '00000000-0000-4000-8000-000000000002',
  submission: '00000000-0000-4000-8000-000000000003',
  decision: '00000000-0000-4000-8000-000000000004',
};

/** The demo workspace's workflow. */
const WORKFLOW: WorkflowInput = {
  stages: (['profile', 'documents', 'submission', 'decision'] as const).map((key, position) => ({
    id: STAGE_IDS[key],
    key,
    name: key[0]!.toUpperCase() + key.slice(1),
    position,
  })),
  modules: [
    {
      key: 'profile_review',
      name: 'Profile review',
      stages: ['profile'],
      counts_toward_progress: true,
      optional: false,
    },
    { key: 'sop', name: 'Statement of purpose', stages: ['documents'], counts_toward_progress: true, optional: true },
    {
      key: 'documents',
      name: 'Document checklist',
      stages: ['documents'],
      counts_toward_progress: true,
      optional: false,
    },
    { key: 'lodgement', name: 'Visa lodgement', stages: ['submission'], counts_toward_progress: true, optional: false },
    { key: 'biometrics', name: 'Biometrics', stages: ['submission'], counts_toward_progress: false, optional: false },
    { key: 'decision', name: 'Decision', stages: ['decision'], counts_toward_progress: true, optional: false },
  ],
};

const NOW = new Date('2026-11-01T10:00:00.000Z');

function open(workflow: WorkflowInput = WORKFLOW): { state: ApplicationState; events: ApplicationEvent[] } {
  const events = decideOpen({
    application_id: 'a0000000-0000-4000-8000-00000000000a',
    lead_id: 'b0000000-0000-4000-8000-00000000000b',
    number: 7,
    workflow,
    now: NOW,
  });
  return { state: fold(events)!, events };
}

const spec = deciderSpec<ApplicationState | undefined, ApplicationCommand, ApplicationEvent>({
  decide: onExisting(decide),
  evolve,
  initialState: () => undefined,
});

/** Runs commands in order, returning the final state and the events of the last one. */
function run(
  state: ApplicationState,
  ...commands: ApplicationCommand[]
): { state: ApplicationState; events: ApplicationEvent[] } {
  let events: ApplicationEvent[] = [];
  for (const command of commands) {
    events = decide(state, command);
    state = events.reduce(evolve, state);
  }
  return { state, events };
}

const mark = (module_key: string, state: 'updated' | 'pending' = 'updated'): ApplicationCommand => ({
  type: 'set_module_state',
  module_key,
  state,
});
const moduleEvent = (e: ApplicationEvent | undefined) => (e as ApplicationModuleUpdated).data.payload.module_event;
const stageChange = (e: ApplicationEvent | undefined) => (e as ApplicationStageChanged).data.payload.stage_change;

t.test('opening a case: APP-<number>, the first stage, optional modules off, an initial stage change', async (t) => {
  const { state, events } = open();
  t.same(
    events.map((e) => e.type),
    ['application.opened', 'application.stage_changed'],
  );
  const status = applicationStatus(state);
  t.same(status, {
    id: 'a0000000-0000-4000-8000-00000000000a',
    reference: 'APP-7',
    case_ref: 'APP-7',
    stage: { key: 'profile', name: 'Profile', position: 0 },
    progress: 0,
    status: 'active',
    outcome: null,
    module: { key: 'profile_review', name: 'Profile review' },
    modules: [
      { key: 'profile_review', name: 'Profile review', state: 'pending' },
      { key: 'documents', name: 'Document checklist', state: 'pending' },
      { key: 'lodgement', name: 'Visa lodgement', state: 'pending' },
      { key: 'biometrics', name: 'Biometrics', state: 'pending' },
      { key: 'decision', name: 'Decision', state: 'pending' },
    ],
    current_module: { key: 'profile_review', name: 'Profile review' },
    module_progress: { updated: 0, total: 4 },
  });
  t.same(stageChange(events[1]), {
    from_stage_id: null,
    to_stage_id: STAGE_IDS.profile,
    direction: 'initial',
    passed_stage_ids: [STAGE_IDS.profile],
    from_stage_key: null,
    to_stage_key: 'profile',
    from_module: null,
    to_module: { key: 'profile_review', name: 'Profile review' },
  });
  const { stage_change: _sc, ...payloadStatus } = (events[1] as ApplicationStageChanged).data.payload;
  t.same(payloadStatus, status, 'the initial event carries the status at that event');
  t.throws(
    () => open({ stages: [], modules: [] }),
    ApplicationRefusal,
    'a workspace without stages cannot open a case',
  );
});

t.test('progress and current_module over optional, custom, deselected and restored modules', async (t) => {
  let { state } = open();
  // Optional module switched on: counted, and placed before documents.
  state = run(state, { type: 'select_module', module_key: 'sop' }).state;
  t.same(applicationStatus(state).module_progress, { updated: 0, total: 5 });
  state = run(state, mark('profile_review')).state;
  let status = applicationStatus(state);
  t.equal(status.stage.key, 'documents', 'completing profile moved the case on');
  t.same(
    status.current_module,
    { key: 'sop', name: 'Statement of purpose' },
    'the optional module placed first is current',
  );
  t.same(status.module, { key: 'documents', name: 'Document checklist' }, 'the roadmap module holds the stage');
  t.equal(status.progress, 20);

  // A custom module placed before sop becomes current; a not-counted custom one changes nothing.
  state = run(state, {
    type: 'add_module',
    name: 'Bank statements',
    after: 'profile_review',
    stage_keys: ['documents'],
  }).state;
  state = run(state, { type: 'add_module', name: 'Courier pickup', counts_toward_progress: false }).state;
  status = applicationStatus(state);
  t.same(status.current_module, { key: 'custom_bank_statements', name: 'Bank statements' });
  t.same(status.module_progress, { updated: 1, total: 6 });
  t.equal(status.progress, 16, '1/6 rounds down');
  t.same(
    status.modules.map((m) => m.key),
    [
      'profile_review',
      'custom_bank_statements',
      'sop',
      'documents',
      'lodgement',
      'biometrics',
      'decision',
      'custom_courier_pickup',
    ],
  );

  // Deselected: out of the counts and of the modules list; its state is kept.
  state = run(state, mark('sop'), { type: 'deselect_module', module_key: 'sop' }).state;
  status = applicationStatus(state);
  t.same(status.module_progress, { updated: 1, total: 5 }, 'sop updated then switched off: out of both counts');
  t.notOk(status.modules.some((m) => m.key === 'sop'));
  state = run(state, { type: 'select_module', module_key: 'sop' }).state;
  t.same(applicationStatus(state).module_progress, { updated: 2, total: 6 }, 'selecting again keeps its updated state');

  // Restored: back on, pending, roadmap name, details cleared.
  state = run(state, {
    type: 'save_module_details',
    module_key: 'sop',
    name: 'SOP (draft 2)',
    details: { words: 950 },
  }).state;
  t.equal(state.modules.find((m) => m.key === 'sop')!.name, 'SOP (draft 2)');
  const restored = run(
    state,
    { type: 'deselect_module', module_key: 'sop' },
    { type: 'restore_module', module_key: 'sop' },
  );
  state = restored.state;
  const sop = state.modules.find((m) => m.key === 'sop')!;
  t.match(sop, { selected: true, state: 'pending', name: 'Statement of purpose', details: {} });
  status = applicationStatus(state);
  t.same(status.module_progress, { updated: 1, total: 6 }, 'restored sop is pending again');
  t.same(status.current_module, { key: 'custom_bank_statements', name: 'Bank statements' });
  t.same(moduleEvent(restored.events[0]), {
    key: 'sop',
    name: 'Statement of purpose',
    kind: 'restored',
    from_state: 'updated',
    to_state: 'pending',
    selected: true,
  });

  // Everything counted updated: current_module null, 100%.
  state = run(
    state,
    mark('custom_bank_statements'),
    mark('sop'),
    mark('documents'),
    mark('lodgement'),
    mark('decision'),
  ).state;
  status = applicationStatus(state);
  t.equal(status.current_module, null);
  t.equal(status.progress, 100);
  t.same(status.module_progress, { updated: 6, total: 6 }, 'biometrics and the courier pickup do not count');
});

t.test('progress rounding and the empty case', async (t) => {
  t.equal(progressPercent({ updated: 0, total: 0 }), 0, 'nothing counted: 0');
  t.equal(progressPercent({ updated: 199, total: 200 }), 99, 'rounded down: 100 only when all are updated');
  t.equal(progressPercent({ updated: 2, total: 3 }), 66);
  t.equal(progressPercent({ updated: 3, total: 3 }), 100);
  const { state } = open({ stages: WORKFLOW.stages, modules: [] });
  t.match(applicationStatus(state), {
    progress: 0,
    module: null,
    current_module: null,
    modules: [],
    module_progress: { updated: 0, total: 0 },
  });
});

t.test('every module event kind and its fields', async (t) => {
  const { state } = open();
  const cases: [ApplicationCommand, object][] = [
    [
      mark('documents'),
      {
        key: 'documents',
        name: 'Document checklist',
        kind: 'state',
        from_state: 'pending',
        to_state: 'updated',
        selected: true,
      },
    ],
    [
      { type: 'select_module', module_key: 'sop' },
      {
        key: 'sop',
        name: 'Statement of purpose',
        kind: 'selected',
        from_state: 'pending',
        to_state: 'pending',
        selected: true,
      },
    ],
    [
      { type: 'deselect_module', module_key: 'lodgement' },
      {
        key: 'lodgement',
        name: 'Visa lodgement',
        kind: 'deselected',
        from_state: 'pending',
        to_state: 'pending',
        selected: false,
      },
    ],
    [
      { type: 'add_module', name: 'Medical exam', key: 'medical' },
      { key: 'medical', name: 'Medical exam', kind: 'added', from_state: null, to_state: 'pending', selected: true },
    ],
  ];
  for (const [command, expected] of cases) {
    const events = decide(state, command);
    t.equal(events.length, 1, `${command.type}: one event`);
    t.equal(events[0]!.type, 'application.module_updated');
    t.same(moduleEvent(events[0]), expected, `${command.type}: module_event`);
    const { module_event: _me, ...payloadStatus } = (events[0] as ApplicationModuleUpdated).data.payload;
    t.same(
      payloadStatus,
      applicationStatus(evolve(state, events[0]!)),
      `${command.type}: the payload is the status at the event`,
    );
  }
  const pending = run(state, mark('documents'), mark('documents', 'pending')).events;
  t.same(moduleEvent(pending[0]), {
    key: 'documents',
    name: 'Document checklist',
    kind: 'state',
    from_state: 'updated',
    to_state: 'pending',
    selected: true,
  });
});

t.test('no change, no event; details are not a module change', async (t) => {
  const { state, events } = open();
  const given = spec(t).given(events);
  given.when(mark('profile_review', 'pending')).thenNothing('marking pending what is pending');
  given.when({ type: 'select_module', module_key: 'documents' }).thenNothing('selecting what is on');
  given.when({ type: 'deselect_module', module_key: 'sop' }).thenNothing('deselecting what is off');
  given.when({ type: 'move_to_stage', stage: 'profile' }).thenNothing('moving to the current stage');
  given.when({ type: 'set_status', status: 'active' }).thenNothing();
  t.same(
    decide(state, { type: 'restore_module', module_key: 'documents' }),
    [],
    'restoring a module already as the roadmap has it',
  );
  const saved = decide(state, { type: 'save_module_details', module_key: 'documents', details: { checklist: 'v2' } });
  t.same(
    saved.map((e) => e.type),
    ['application.module_details_saved'],
    'saving details is an internal event only',
  );
  const after = saved.reduce(evolve, state);
  t.same(
    decide(after, { type: 'save_module_details', module_key: 'documents', details: { checklist: 'v2' } }),
    [],
    'saving the same details again',
  );
  const removed = run(after, {
    type: 'save_module_details',
    module_key: 'documents',
    details: { checklist: null },
  }).state;
  t.same(removed.modules.find((m) => m.key === 'documents')!.details, {}, 'a null detail is removed');
});

t.test('stage moves: skipped stages forward, backward, and moves from module updates', async (t) => {
  const { state } = open();
  const forward = decide(state, { type: 'move_to_stage', stage: 'decision' });
  // From the first stage straight to the decision: every stage entered is listed, the skipped ones too.
  const profileToDecision = {
    from_stage_id: STAGE_IDS.profile,
    to_stage_id: STAGE_IDS.decision,
    direction: 'forward',
    passed_stage_ids: [STAGE_IDS.documents, STAGE_IDS.submission, STAGE_IDS.decision],
    from_stage_key: 'profile',
    to_stage_key: 'decision',
    from_module: { key: 'profile_review', name: 'Profile review' },
    to_module: { key: 'decision', name: 'Decision' },
  };
  t.same(
    stageChange(forward[0]),
    profileToDecision,
    'a forward move lists every stage entered, the skipped ones too, target last',
  );
  t.equal((forward[0] as ApplicationStageChanged).data.cause, 'manual');
  const atDecision = forward.reduce(evolve, state);
  t.match(
    (forward[0] as ApplicationStageChanged).data.payload,
    { stage: { key: 'decision', position: 3 }, module: { key: 'decision' } },
    'the payload shows the state after the move',
  );
  const back = decide(atDecision, { type: 'move_to_stage', stage: STAGE_IDS.documents });
  t.same(
    stageChange(back[0]),
    {
      from_stage_id: STAGE_IDS.decision,
      to_stage_id: STAGE_IDS.documents,
      direction: 'backward',
      passed_stage_ids: [],
      from_stage_key: 'decision',
      to_stage_key: 'documents',
      from_module: { key: 'decision', name: 'Decision' },
      to_module: { key: 'documents', name: 'Document checklist' },
    },
    'a backward move passes no stages; the target may be given by id',
  );
  t.throws(() => decide(state, { type: 'move_to_stage', stage: 'nowhere' }), {
    kind: 'invalid',
    code: 'validation_failed',
  });

  // Modules of later stages done out of order: finishing profile skips the completed stages.
  const early = run(state, mark('documents'), mark('lodgement'), mark('biometrics'));
  t.same(
    early.events.map((e) => e.type),
    ['application.module_updated'],
    "updating another stage's module does not move the case",
  );
  const finish = run(early.state, mark('profile_review'));
  t.same(
    finish.events.map((e) => e.type),
    ['application.module_updated', 'application.stage_changed'],
    'the module event, then the move it caused',
  );
  t.same(stageChange(finish.events[1]), profileToDecision, 'finishing the profile moves the case the same way');
  t.equal((finish.events[1] as ApplicationStageChanged).data.cause, 'modules');
  t.equal(
    (finish.events[0] as ApplicationModuleUpdated).data.payload.stage.key,
    'profile',
    'the module event shows the stage before the move',
  );

  // Switching off the last pending module of a stage completes it too; marking pending never moves back.
  const atDocs = run(state, mark('profile_review')).state;
  t.equal(applicationStatus(atDocs).stage.key, 'documents');
  const withSop = run(atDocs, { type: 'select_module', module_key: 'sop' }, mark('documents')).state;
  t.equal(applicationStatus(withSop).stage.key, 'documents', 'a selected pending optional module holds the stage');
  const dropped = run(withSop, { type: 'deselect_module', module_key: 'sop' });
  t.same(
    dropped.events.map((e) => e.type),
    ['application.module_updated', 'application.stage_changed'],
  );
  t.equal(applicationStatus(dropped.state).stage.key, 'submission');
  const reopened = run(dropped.state, mark('profile_review', 'pending'));
  t.same(
    reopened.events.map((e) => e.type),
    ['application.module_updated'],
    'no automatic move backward',
  );

  // All done: the case ends at the last stage and stays there.
  const done = run(
    state,
    mark('decision'),
    mark('lodgement'),
    mark('biometrics'),
    mark('documents'),
    mark('profile_review'),
  );
  t.equal(applicationStatus(done.state).stage.key, 'decision');
  t.same(stageChange(done.events[1]).passed_stage_ids, [STAGE_IDS.documents, STAGE_IDS.submission, STAGE_IDS.decision]);
});

t.test('status, outcome and refusals', async (t) => {
  const { state } = open();
  const outcome = decide(state, { type: 'record_outcome', outcome: 'granted' });
  t.same(
    outcome.map((e) => e.type),
    ['application.outcome'],
  );
  t.same((outcome[0] as Extract<ApplicationEvent, { type: 'application.outcome' }>).data.payload, {
    ...applicationStatus(state),
    outcome: 'granted',
  });
  const granted = outcome.reduce(evolve, state);
  t.same(decide(granted, { type: 'record_outcome', outcome: 'granted' }), [], 'the same outcome again is no change');
  t.match(decide(granted, { type: 'record_outcome', outcome: 'refused' })[0], {
    data: { outcome: 'refused', previous_outcome: 'granted' },
  });

  const closed = run(state, { type: 'set_status', status: 'closed' });
  t.same(
    closed.events,
    [{ type: 'application.status_changed', data: { from: 'active', to: 'closed' } }],
    'status changes are internal events',
  );
  t.equal(applicationStatus(closed.state).status, 'closed');
  t.throws(() => decide(closed.state, mark('profile_review')), { kind: 'conflict', code: 'application_closed' });
  t.throws(() => decide(closed.state, { type: 'move_to_stage', stage: 'decision' }), {
    kind: 'conflict',
    code: 'application_closed',
  });
  t.equal(
    decide(closed.state, { type: 'record_outcome', outcome: 'withdrawn' }).length,
    1,
    'an outcome may be recorded on a closed case',
  );
  t.equal(
    run(closed.state, { type: 'set_status', status: 'active' }, mark('profile_review')).events.length,
    2,
    'reopened, it can be worked on',
  );

  t.throws(() => decide(state, mark('sop')), { kind: 'conflict', code: 'module_not_selected' });
  t.throws(() => decide(state, mark('nope')), { kind: 'not_found', code: 'module_not_found' });
  t.throws(() => decide(state, { type: 'add_module', name: 'Again', key: 'documents' }), {
    kind: 'conflict',
    code: 'module_exists',
  });
  t.throws(() => decide(state, { type: 'add_module', name: 'X', stage_keys: ['nowhere'] }), {
    kind: 'invalid',
    code: 'validation_failed',
  });
  t.throws(() => decide(state, { type: 'add_module', name: 'X', after: 'nowhere' }), {
    kind: 'invalid',
    code: 'validation_failed',
  });
  t.throws(() => decide(state, { type: 'add_module', name: '   ' }), { kind: 'invalid', code: 'validation_failed' });
  const twice = run(state, { type: 'add_module', name: 'Medical' }, { type: 'add_module', name: 'Medical' }).state;
  t.same(
    twice.modules.slice(-2).map((m) => m.key),
    ['custom_medical', 'custom_medical_2'],
    'derived keys stay unique',
  );
  const placed = run(state, { type: 'add_module', name: 'First', before: 'profile_review' }).state;
  t.equal(placed.modules[0]!.key, 'custom_first', 'placed before a module');
});

t.test('a note goes on the timeline whatever the status, closed included; a blank one is refused', async (t) => {
  const { events } = open();
  const author = { type: 'user' as const, user_id: 'u1', email: 'asha@example.com', name: 'Asha' };
  const at = NOW.toISOString();
  const closed = [
    ...events,
    { type: 'application.status_changed' as const, data: { from: 'active' as const, to: 'closed' as const } },
  ];
  spec(t)
    .given(closed)
    .when({ type: 'add_note', note: '  Visa stamped, passport returned  ', author, at })
    .then([{ type: 'application.note_added', data: { at, note: 'Visa stamped, passport returned', author } }]);
  spec(t)
    .given(events)
    .when({ type: 'add_note', note: '   ', author, at })
    .thenThrows({ code: 'validation_failed', fields: { note: 'must not be blank' } });
  spec(t)
    .given(events)
    .when({ type: 'add_note', note: 'x'.repeat(5001), author, at })
    .thenThrows({ code: 'validation_failed' });
});
