import t from 'tap';
import { decide, type LeadCommand, type LeadPatch } from '../../src/domain/leads/decide.js';
import type { LeadCreated, LeadEvent } from '../../src/domain/leads/events.js';
import { evolve } from '../../src/domain/leads/evolve.js';
import type { Lead } from '../../src/domain/leads/lead.js';
import type { LeadSubmission } from '../../src/domain/leads/submission.js';
import { SecretBox } from '../../src/shared/secret-box.js';
import { settingsFromDefinition } from '../../src/workspaces/repository.js';
import { demoDefinition } from '../support/app.js';
import { deciderSpec } from '../support/decider-spec.js';

// The lead decider's rules, given/when/then, without a database (the HTTP tests cover the same rules end to end).

const settings = settingsFromDefinition(demoDefinition(), undefined, new SecretBox(Buffer.alloc(32, 5)));
const LEAD_ID = '0b6f0c2e-5d55-4f0e-9a43-3c1c2f4b8a01';
const T0 = new Date('2026-11-01T10:00:00.000Z');
const T1 = new Date('2026-11-02T09:30:00.000Z');
const SOURCE = { key: 'web_form', name: 'Web form' };
const STAFF = { type: 'user' as const, email: 'asha@northstar.example' };

const spec = deciderSpec<Lead | undefined, LeadCommand, LeadEvent>({
  decide,
  evolve,
  initialState: () => undefined,
});

function submission(overrides: Partial<LeadSubmission> = {}): LeadSubmission {
  return {
    full_name: 'Priya Sharma',
    phone: '+919876543210',
    alt_phone: null,
    email: 'priya.sharma@example.com',
    city: 'Delhi',
    state: null,
    country_interest: 'CA',
    visa_type: 'student',
    intake: null,
    course: null,
    date_of_birth: null,
    highest_qualification: 'bachelors',
    score_percent: null,
    english_test: null,
    work_experience_years: null,
    passport_available: true,
    previous_refusals: null,
    utm: null,
    landing_page_url: null,
    custom_fields: {},
    message: 'Looking for a September intake',
    ...overrides,
  };
}

const capture = (overrides: Partial<LeadSubmission> = {}, now = T0): LeadCommand => ({
  type: 'capture',
  leadId: LEAD_ID,
  submission: submission(overrides),
  matchedOn: ['email'],
  source: SOURCE,
  consentSource: 'web_form@v1',
  settings,
  now,
});
const update = (patch: LeadPatch, now = T1): LeadCommand => ({ type: 'update', patch, settings, author: STAFF, now });
const convert = (now = T1): LeadCommand => ({
  type: 'convert',
  application: { id: 'a0000000-0000-4000-8000-00000000000a', case_ref: 'APP-7' },
  now,
});

/** The events of a command on the given history (to build the next history). */
function decided(history: LeadEvent[], command: LeadCommand): LeadEvent[] {
  return decide(history.reduce(evolve, undefined), command);
}

const created = decided([], capture()) as [LeadCreated];
const lead = created[0].data.payload;
const converted = [...created, ...decided(created, convert())];
const lost = [
  ...created,
  ...decided(
    created,
    update({ stage_key: 'lost', lost_reason_key: 'not_reachable' }, new Date('2026-11-01T12:00:00Z')),
  ),
];

t.test(
  'capture: a new person becomes a lead in the first stage, with consent and an owner of the branch',
  async (t) => {
    spec(t)
      .given([])
      .when(capture())
      .thenMatches([
        {
          type: 'lead.created',
          data: {
            message: 'Looking for a September intake',
            payload: {
              id: LEAD_ID,
              full_name: 'Priya Sharma',
              email: 'priya.sharma@example.com',
              stage: { key: 'new', name: 'New' },
              source: SOURCE,
              consent: { at: T0.toISOString(), source: 'web_form@v1' },
              converted: false,
              lost_reason: null,
              created_at: T0.toISOString(),
              updated_at: T0.toISOString(),
              last_activity_at: T0.toISOString(),
            },
          },
        },
      ]);
    const branchUsers = settings.users.filter((u) => u.branch_id === lead.branch.id && u.active).map((u) => u.id);
    t.ok(lead.owner === null || branchUsers.includes(lead.owner.id), 'the owner is an active user of its branch');
    t.notOk('message' in lead, 'the message is beside the Lead, not in it');
  },
);

t.test('capture of a person the workspace knows: an enquiry on the existing lead, no new lead', async (t) => {
  const { message, ...fields } = submission({ full_name: 'Priya S.' });
  spec(t)
    .given(created)
    .when(capture({ full_name: 'Priya S.' }, T1))
    .then([
      {
        type: 'lead.enquiry_received',
        data: { at: T1.toISOString(), source: SOURCE, matched_on: ['email'], message, submission: fields },
      },
    ]);
  const after = [...created, ...decided(created, capture({}, T1))].reduce(evolve, undefined)!;
  t.equal(after.full_name, 'Priya Sharma', 'the enquiry changes none of the lead’s fields');
  t.equal(after.last_activity_at, T1.toISOString(), 'but moves its activity time');
});

t.test('update rules', async (t) => {
  spec(t)
    .given(created)
    .when(update({ temperature: 'hot', stage_key: 'contacted' }))
    .thenMatches([
      {
        type: 'lead.updated',
        data: {
          payload: {
            temperature: 'hot',
            stage: { key: 'contacted', name: 'Contacted' },
            stage_changed_at: T1.toISOString(),
            updated_at: T1.toISOString(),
            changed_fields: ['stage', 'temperature', 'stage_changed_at'],
          },
        },
      },
    ]);
  spec(t)
    .given(created)
    .when(update({ temperature: null, stage_key: 'new' }))
    .thenNothing('a patch that changes nothing');
  spec(t)
    .given(created)
    .when(update({ note: 'Called, no answer' }))
    .then([{ type: 'lead.note_added', data: { at: T1.toISOString(), note: 'Called, no answer', author: STAFF } }]);
  const otherBranch = settings.users.find((u) => u.branch_id !== lead.branch.id && u.active)!;
  spec(t)
    .given(created)
    .when(update({ stage_key: 'nowhere', owner_email: otherBranch.email, note: '  ' }))
    .thenThrows(
      {
        kind: 'invalid',
        code: 'validation_failed',
        fields: { stage_key: /not a stage/, owner_email: /not an active user/, note: 'must not be blank' },
      },
      'every invalid field is named at once',
    );
  spec(t)
    .given(created)
    .when(update({ stage_key: 'converted' }))
    .thenThrows({ kind: 'conflict', code: 'stage_requires_conversion' });
  spec(t)
    .given([])
    .when(update({ temperature: 'hot' }))
    .thenThrows({ kind: 'not_found', code: 'not_found' });
  const sameBranch = settings.users.find((u) => u.branch_id === lead.branch.id && u.active && u.id !== lead.owner?.id)!;
  spec(t)
    .given(created)
    .when(update({ owner_email: sameBranch.email.toUpperCase() }))
    .thenMatches([
      {
        type: 'lead.assigned',
        data: { payload: { owner: { id: sameBranch.id, email: sameBranch.email } }, previous_owner: lead.owner },
      },
    ]);
});

t.test('lost: the lost stage needs a reason; the reason belongs to the lost stage only', async (t) => {
  spec(t)
    .given(created)
    .when(update({ stage_key: 'lost' }))
    .thenThrows({ kind: 'invalid', code: 'lost_reason_required' });
  spec(t)
    .given(created)
    .when(update({ lost_reason_key: 'not_reachable' }))
    .thenThrows({ code: 'validation_failed', fields: { lost_reason_key: /lost stage/ } });
  spec(t)
    .given(created)
    .when(update({ stage_key: 'lost', lost_reason_key: 'not_reachable' }))
    .thenMatches([
      {
        type: 'lead.lost',
        data: {
          previous_stage: { key: 'new', name: 'New' },
          payload: {
            stage: { key: 'lost', name: 'Lost' },
            lost_reason: { key: 'not_reachable', name: 'Not reachable' },
            stage_changed_at: T1.toISOString(),
          },
        },
      },
    ]);
  spec(t)
    .given(lost)
    .when(update({ lost_reason_key: 'chose_competitor' }))
    .thenMatches(
      [
        {
          type: 'lead.updated',
          data: { payload: { lost_reason: { key: 'chose_competitor' }, changed_fields: ['lost_reason'] } },
        },
      ],
      'a lost lead may change its reason',
    );
  spec(t)
    .given(lost)
    .when(update({ stage_key: 'contacted' }))
    .thenMatches(
      [{ type: 'lead.updated', data: { payload: { stage: { key: 'contacted' }, lost_reason: null } } }],
      'leaving the lost stage clears the reason',
    );
});

t.test('lock: a converted lead refuses every change and a second conversion', async (t) => {
  spec(t)
    .given(created)
    .when(convert())
    .then([
      {
        type: 'lead.converted',
        data: {
          payload: {
            ...lead,
            converted: true,
            stage: { key: 'converted', name: 'Converted' },
            stage_changed_at: T1.toISOString(),
            updated_at: T1.toISOString(),
            last_activity_at: T1.toISOString(),
          },
          application: { id: 'a0000000-0000-4000-8000-00000000000a', case_ref: 'APP-7' },
        },
      },
    ]);
  for (const patch of [{ temperature: 'hot' as const }, { note: 'hello' }, { stage_key: 'new' }])
    spec(t)
      .given(converted)
      .when(update(patch))
      .thenThrows({ kind: 'conflict', code: 'lead_locked' }, JSON.stringify(patch));
  spec(t).given(converted).when(convert()).thenThrows({ kind: 'conflict', code: 'lead_locked' });
  spec(t)
    .given(converted)
    .when(capture({}, T1))
    .thenMatches([{ type: 'lead.enquiry_received' }], 'a converted lead still collects enquiries');
});

t.test('note: a staff note on the timeline, converted or not; blank or unknown lead refused', async (t) => {
  const note = (text: string, now = T1): LeadCommand => ({ type: 'note', note: text, author: STAFF, now });
  spec(t)
    .given(created)
    .when(note('  Called back, asked for the fee list  '))
    .then([
      {
        type: 'lead.note_added',
        data: { at: T1.toISOString(), note: 'Called back, asked for the fee list', author: STAFF },
      },
    ]);
  spec(t)
    .given(converted)
    .when(note('After conversion'))
    .thenMatches([{ type: 'lead.note_added' }], 'a converted lead takes a note on its own');
  spec(t).given(created).when(note('   ')).thenThrows({ kind: 'invalid', code: 'validation_failed' });
  spec(t).given([]).when(note('hello')).thenThrows({ kind: 'not_found', code: 'not_found' });
});

t.test('evolve: timeline events move the activity time forward only', async (t) => {
  const later: LeadEvent = {
    type: 'lead.note_added',
    data: { at: '2026-11-03T00:00:00.000Z', note: 'later', author: STAFF },
  };
  const earlier: LeadEvent = {
    type: 'lead.note_added',
    data: { at: '2026-11-01T11:00:00.000Z', note: 'earlier, landed late', author: STAFF },
  };
  const state = [...created, later, earlier].reduce(evolve, undefined)!;
  t.equal(state.last_activity_at, '2026-11-03T00:00:00.000Z');
  t.equal(state.updated_at, '2026-11-03T00:00:00.000Z');
  t.equal([earlier].reduce(evolve, undefined), undefined, 'a timeline event without a lead is no lead');
});
