import fc from 'fast-check';
import t from 'tap';
import {
  actorText,
  eventSummary,
  stageNamesOf,
  SUMMARISED_EVENT_TYPES,
} from '../../../src/commands/history/summary.js';
import {
  APPLICATION_EVENT_TYPES,
  type ApplicationEvent,
  type ApplicationStatus,
  type CaseModule,
} from '../../../src/domain/applications/types.js';
import { DOCUMENT_EVENT_TYPES, type Document, type DocumentEvent } from '../../../src/domain/documents/types.js';
import {
  INVOICE_EVENT_TYPES,
  type Invoice,
  type InvoiceEvent,
  type Payment,
  type Refund,
} from '../../../src/domain/invoices/types.js';
import type { LeadEvent } from '../../../src/domain/leads/events.js';
import { LEAD_EVENT_TYPES, type Lead } from '../../../src/domain/leads/lead.js';
import { TASK_EVENT_TYPES, type Task, type TaskEvent } from '../../../src/domain/tasks/types.js';
import { ENDPOINT_EVENTS, type EndpointEvent } from '../../../src/domain/webhooks/endpoint.js';
import type { ListExportEvent } from '../../../src/domain/exports/list-export.js';
import { checkProperty } from '../../support/properties.js';

// Every event's summary (the console's timelines, `visa-crm history`, the admin history routes) says what
// happened in words, never as JSON, whatever the event's data holds.

type AnyEvent =
  LeadEvent | ApplicationEvent | TaskEvent | InvoiceEvent | DocumentEvent | EndpointEvent | ListExportEvent;

const AT = '2026-11-26T10:30:00.000Z';
const LEAD_ID = '5a0c1d52-7f0e-4a8e-9a57-0f3f8e1c2b01';
const APPLICATION_ID = '7b1d2e63-8a1f-4b9f-8b68-1a4a9f2d3c02';
const ASHA = { id: '9c2e3f74-9b2a-4cab-9c79-2b5bab3e4d03', name: 'Asha Rao', email: 'asha@northstar.example' };
const RAVI = { id: 'ad3f4085-ac3b-4dbc-8d8a-3c6cbc4f5e04', name: 'Ravi Menon', email: 'ravi@northstar.example' };

const LEAD: Lead = {
  id: LEAD_ID,
  full_name: 'Priya Sharma',
  phone: '+919812345678',
  alt_phone: null,
  email: 'priya@example.org',
  city: 'Pune',
  state: 'MH',
  country_interest: 'CA',
  visa_type: 'student',
  intake: '2027-09',
  course: 'MSc Data Science',
  date_of_birth: '2001-04-02',
  highest_qualification: 'bachelors',
  score_percent: 78,
  english_test: { type: 'IELTS', overall: 7.5 },
  work_experience_years: 2,
  passport_available: true,
  previous_refusals: 0,
  source: { key: 'website', name: 'Website' },
  campaign: null,
  utm: null,
  landing_page_url: null,
  branch: { id: 'be405196-bd4c-4ecd-9e9b-4d7dcd506f05', code: 'PUN' },
  owner: ASHA,
  stage: { key: 'new', name: 'New' },
  temperature: null,
  score: 40,
  next_follow_up_at: null,
  lost_reason: null,
  converted: false,
  custom_fields: {},
  consent: { at: AT, source: 'website form' },
  created_at: AT,
  updated_at: AT,
  last_activity_at: AT,
  stage_changed_at: null,
};

const SUBMISSION = {
  full_name: LEAD.full_name,
  phone: LEAD.phone,
  alt_phone: LEAD.alt_phone,
  email: LEAD.email,
  city: LEAD.city,
  state: LEAD.state,
  country_interest: LEAD.country_interest,
  visa_type: LEAD.visa_type,
  intake: LEAD.intake,
  course: LEAD.course,
  date_of_birth: LEAD.date_of_birth,
  highest_qualification: LEAD.highest_qualification,
  score_percent: LEAD.score_percent,
  english_test: LEAD.english_test,
  work_experience_years: LEAD.work_experience_years,
  passport_available: LEAD.passport_available,
  previous_refusals: LEAD.previous_refusals,
  utm: LEAD.utm,
  landing_page_url: LEAD.landing_page_url,
  custom_fields: LEAD.custom_fields,
};

const MODULE: CaseModule = {
  key: 'profile',
  name: 'Profile review',
  roadmap_name: 'Profile review',
  stages: ['profile'],
  counts_toward_progress: true,
  optional: false,
  custom: false,
  selected: true,
  state: 'updated',
  details: {},
};

const STATUS: ApplicationStatus = {
  id: APPLICATION_ID,
  reference: 'APP-12',
  case_ref: 'APP-12',
  stage: { key: 'documents', name: 'Documents', position: 2 },
  progress: 40,
  status: 'active',
  outcome: null,
  module: null,
  modules: [{ key: 'profile', name: 'Profile review', state: 'updated' }],
  current_module: null,
  module_progress: { updated: 1, total: 3 },
};

const TASK: Task = {
  id: 'cf5162a7-ce5d-4fde-8f8c-5e8ede617006',
  lead_id: LEAD_ID,
  application_id: null,
  title: 'Collect IELTS scores',
  assignee: { user_id: RAVI.id, email: RAVI.email, name: RAVI.name },
  due_at: '2026-11-28T09:00:00.000Z',
  status: 'open',
  overdue: true,
  created_at: AT,
  updated_at: AT,
  completed_at: null,
};

const REFUND: Refund = {
  id: 'd06273b8-df6e-4e0f-9f9d-6f9fef728107',
  payment_id: 'e17384c9-e07f-4f1a-8a0e-7a0a0f839208',
  invoice_id: 'f28495da-f180-4a2b-9b1f-8b1b1a94a309',
  amount: 2500,
  currency: 'INR',
  reason: 'Course cancelled',
  status: 'paid',
  created_at: AT,
  paid_at: AT,
};

const PAYMENT: Payment = {
  id: REFUND.payment_id,
  invoice_id: REFUND.invoice_id,
  amount: 50000,
  currency: 'INR',
  method: 'bank_transfer',
  reference: 'UTR 4471',
  received_at: AT,
  refunded_amount: 0,
  refunds: [],
};

const INVOICE: Invoice = {
  id: REFUND.invoice_id,
  number: 'INV-7',
  lead_id: LEAD_ID,
  application_id: null,
  currency: 'INR',
  currency_exponent: 2,
  line_items: [{ description: 'Counselling', quantity: 1, unit_amount: 123456, amount: 123456 }],
  subtotal: 123456,
  tax_rate_basis_points: 0,
  tax_amount: 0,
  total: 123456,
  amount_paid: 0,
  balance: 123456,
  status: 'open',
  due_date: '2026-12-15',
  issued_at: AT,
  payments: [],
};

const DOCUMENT: Document = {
  id: '039506eb-0291-4b3c-8c2a-9c2c2ba5b40a',
  lead_id: LEAD_ID,
  application_id: null,
  type: 'passport',
  filename: 'passport.pdf',
  content_type: 'application/pdf',
  size: 20480,
  checksum_sha256: 'ab'.repeat(32),
  status: 'available',
  scan_signature: null,
  scanned_at: AT,
  scan_error: null,
  rejection_reason: null,
  rejected_at: null,
  created_at: AT,
  updated_at: AT,
};

const contacted: Lead = { ...LEAD, stage: { key: 'contacted', name: 'Contacted' }, temperature: 'hot' };
const lost: Lead = { ...LEAD, stage: { key: 'lost', name: 'Lost' }, lost_reason: { key: 'nr', name: 'Not reachable' } };

/** One event of every type the service appends, and what its summary must say. */
const EVERY_EVENT: { event: AnyEvent; says: string | RegExp }[] = [
  {
    event: { type: 'lead.created', data: { payload: LEAD, message: 'Call me after six' } },
    says: 'Created from source Website at stage New, owner Asha Rao (asha@northstar.example). Message: Call me after six',
  },
  {
    event: {
      type: 'lead.updated',
      data: { payload: { ...contacted, changed_fields: ['phone', 'stage', 'temperature', 'stage_changed_at'] } },
    },
    says: 'Changed phone, stage to Contacted, temperature to hot',
  },
  {
    event: { type: 'lead.assigned', data: { payload: { ...LEAD, owner: RAVI }, previous_owner: ASHA } },
    says: 'Owner changed: Asha Rao (asha@northstar.example) → Ravi Menon (ravi@northstar.example)',
  },
  {
    event: { type: 'lead.lost', data: { payload: lost, previous_stage: { key: 'contacted', name: 'Contacted' } } },
    says: 'Marked lost: Not reachable (was at stage Contacted)',
  },
  {
    event: {
      type: 'lead.converted',
      data: { payload: { ...LEAD, converted: true }, application: { id: APPLICATION_ID, case_ref: 'APP-12' } },
    },
    says: 'Converted to application APP-12',
  },
  {
    event: {
      type: 'lead.enquiry_received',
      data: {
        at: AT,
        source: { key: 'website', name: 'Website' },
        matched_on: ['phone'],
        message: null,
        submission: SUBMISSION,
      },
    },
    says: 'Enquiry received again via Website, matched on phone',
  },
  {
    event: {
      type: 'lead.note_added',
      data: { at: AT, note: 'Asked for a call after six', author: { type: 'user', email: ASHA.email } },
    },
    says: 'Note: Asked for a call after six',
  },
  {
    event: {
      type: 'application.opened',
      data: {
        application_id: APPLICATION_ID,
        lead_id: LEAD_ID,
        case_ref: 'APP-12',
        number: 12,
        stages: [
          { id: 's1', key: 'profile', name: 'Profile', position: 1 },
          { id: 's2', key: 'documents', name: 'Documents', position: 2 },
        ],
        modules: [MODULE, { ...MODULE, key: 'sop', name: 'Statement of purpose', selected: false }],
        opened_at: AT,
      },
    },
    says: `Opened APP-12 from its lead, with stages Profile, Documents and modules Profile review, Statement of purpose (switched off)`,
  },
  {
    event: {
      type: 'application.stage_changed',
      data: {
        to_stage_id: 's2',
        cause: 'modules',
        payload: {
          ...STATUS,
          stage_change: {
            from_stage_id: 's1',
            to_stage_id: 's2',
            direction: 'forward',
            passed_stage_ids: ['s2'],
            from_stage_key: 'profile',
            to_stage_key: 'documents',
            from_module: null,
            to_module: null,
          },
        },
      },
    },
    says: 'Stage profile → Documents (forward, after module updates); progress 40%',
  },
  {
    event: {
      type: 'application.module_updated',
      data: {
        module_key: 'profile',
        kind: 'state',
        module: MODULE,
        index: 0,
        payload: {
          ...STATUS,
          module_event: {
            key: 'profile',
            name: 'Profile review',
            kind: 'state',
            from_state: 'pending',
            to_state: 'updated',
            selected: true,
          },
        },
      },
    },
    says: 'Module "Profile review" marked updated (was pending); progress 40%',
  },
  {
    event: {
      type: 'application.module_details_saved',
      data: {
        module_key: 'visa',
        name: 'Visa filing',
        details: { passport_number: 'K1234567', biometrics: { booked: true } },
      },
    },
    says: 'Saved module "Visa filing" (visa): details passport number K1234567, biometrics',
  },
  {
    event: { type: 'application.status_changed', data: { from: 'active', to: 'on_hold' } },
    says: 'Status changed: active → on hold',
  },
  {
    event: {
      type: 'application.note_added',
      data: { at: AT, note: 'Biometrics booked for Monday', author: { type: 'user', email: ASHA.email } },
    },
    says: 'Note: Biometrics booked for Monday',
  },
  {
    event: { type: 'application.outcome', data: { outcome: 'granted', previous_outcome: 'refused', payload: STATUS } },
    says: 'Outcome recorded: granted (was refused)',
  },
  {
    event: {
      type: 'task.created',
      data: {
        task_id: TASK.id,
        lead_id: LEAD_ID,
        application_id: null,
        title: TASK.title,
        assignee: TASK.assignee,
        due_at: TASK.due_at,
        created_at: AT,
        person_id: LEAD_ID,
      },
    },
    says: `Created "Collect IELTS scores" for lead ${LEAD_ID}, due 2026-11-28 09:00 UTC, assigned to Ravi Menon (ravi@northstar.example)`,
  },
  {
    event: { type: 'task.changed', data: { title: 'Collect PTE scores', assignee: null, due_at: AT, changed_at: AT } },
    says: 'Changed: now "Collect PTE scores", due 2026-11-26 10:30 UTC, assigned to nobody',
  },
  { event: { type: 'task.completed', data: { completed_at: AT } }, says: 'Completed at 2026-11-26 10:30 UTC' },
  { event: { type: 'task.reopened', data: { reopened_at: AT } }, says: 'Reopened at 2026-11-26 10:30 UTC' },
  {
    event: { type: 'task.overdue', data: { due_at: TASK.due_at, payload: TASK } },
    says: 'Overdue: due 2026-11-28 09:00 UTC passed while open',
  },
  {
    event: { type: 'invoice.issued', data: { invoice_id: INVOICE.id, payload: INVOICE, person_id: LEAD_ID } },
    says: `Issued INV-7 for lead ${LEAD_ID}: total 1234.56 INR, due 2026-12-15`,
  },
  {
    event: { type: 'payment.received', data: { payment_id: PAYMENT.id, payload: PAYMENT } },
    says: `Received payment ${PAYMENT.id} of 500.00 INR by bank transfer, reference UTR 4471`,
  },
  {
    event: { type: 'refund.created', data: { refund: { ...REFUND, status: 'pending', paid_at: null } } },
    says: `Refund ${REFUND.id} of 25.00 INR from payment ${PAYMENT.id} created: Course cancelled`,
  },
  {
    event: {
      type: 'refund.paid',
      data: { refund_id: REFUND.id, payment_id: PAYMENT.id, paid_at: AT, payload: REFUND },
    },
    says: `Refund ${REFUND.id} of 25.00 INR paid out`,
  },
  {
    event: {
      type: 'document.received',
      data: {
        document_id: DOCUMENT.id,
        lead_id: LEAD_ID,
        application_id: null,
        document_type: 'passport',
        filename: 'passport.pdf',
        content_type: 'application/pdf',
        size: 20480,
        checksum_sha256: DOCUMENT.checksum_sha256,
        received_at: AT,
        person_id: LEAD_ID,
      },
    },
    says: `Received passport "passport.pdf" for lead ${LEAD_ID}: application/pdf, 20480 bytes`,
  },
  {
    event: { type: 'document.uploaded', data: { scanned_at: AT, payload: DOCUMENT } },
    says: 'Passed the virus scan at 2026-11-26 10:30 UTC; stored',
  },
  {
    event: { type: 'document.infected', data: { scanned_at: AT, signature: 'Eicar-Signature' } },
    says: 'Refused by the virus scan at 2026-11-26 10:30 UTC: Eicar-Signature; the file was deleted',
  },
  {
    event: { type: 'document.scan_failed', data: { failed_at: AT, reason: 'size limit exceeded', attempts: 3 } },
    says: 'the virus scanner failed 3 time(s) (size limit exceeded); the file was deleted',
  },
  {
    event: {
      type: 'document.rejected',
      data: {
        reason: 'Not signed',
        rejected_at: AT,
        payload: { ...DOCUMENT, status: 'rejected', rejection_reason: 'Not signed' },
      },
    },
    says: 'Rejected: Not signed',
  },
  {
    event: {
      type: ENDPOINT_EVENTS.created,
      data: {
        endpoint_id: 'e1',
        url: 'https://hooks.example.com/crm',
        description: 'Our CRM',
        events: ['lead.created', 'lead.lost'],
        sealed_secret: 'sealed-secret-value',
      },
    },
    says: 'Created for https://hooks.example.com/crm (Our CRM), subscribed to lead.created, lead.lost',
  },
  {
    event: {
      type: ENDPOINT_EVENTS.changed,
      data: { endpoint_id: 'e1', url: 'https://hooks.example.com/v2', description: null, events: ['lead.lost'] },
    },
    says: 'Changed to https://hooks.example.com/v2, subscribed to lead.lost',
  },
  { event: { type: ENDPOINT_EVENTS.deleted, data: { endpoint_id: 'e1' } }, says: 'Deleted' },
  {
    event: {
      type: ENDPOINT_EVENTS.paused,
      data: { endpoint_id: 'e1', reason: 'too many failures', consecutive_failures: 50 },
    },
    says: 'Paused after 50 failed deliveries in a row: too many failures',
  },
  { event: { type: ENDPOINT_EVENTS.resumed, data: { endpoint_id: 'e1' } }, says: 'Resumed' },
  {
    event: {
      type: ENDPOINT_EVENTS.versionChanged,
      data: { endpoint_id: 'e1', payload_version: '2026-11-29', previous_payload_version: '2026-11-22' },
    },
    says: 'Payload version changed from 2026-11-22 to 2026-11-29',
  },
  {
    event: {
      type: ENDPOINT_EVENTS.rateLimitChanged,
      data: { endpoint_id: 'e1', rate_limit_per_second: 5, previous_rate_limit_per_second: null },
    },
    says: 'Rate limit changed from no limit to 5 a second',
  },
  {
    event: {
      type: ENDPOINT_EVENTS.secretRotated,
      data: {
        endpoint_id: 'e1',
        sealed_secret: 'new-sealed',
        previous_sealed_secret: 'old-sealed',
        previous_secret_valid_until: '2026-11-27T10:30:00.000Z',
      },
    },
    says: 'Signing secret rotated; the previous one stays valid until 2026-11-27 10:30 UTC',
  },
  {
    event: { type: ENDPOINT_EVENTS.test, data: { endpoint_id: 'e1', payload: { id: 'e1', url: 'https://x.example' } } },
    says: 'Test delivery sent',
  },
  {
    event: { type: 'list.exported', data: { list: 'leads', filter: 'stage=new', scope: 'filter', count: 230 } },
    says: 'Exported 230 row(s) of the leads list as CSV (filter stage=new; filter)',
  },
];

/** JSON's marks: braces, brackets, a quoted key. A summary holding one printed structure instead of words. */
const JSON_MARKS = /[{}[\]]|"[^"]*"\s*:/;

const summaryOf = (event: { type: string; data: unknown }) =>
  eventSummary({ type: event.type, data: event.data as Record<string, unknown> });

t.test('a summary is written for every event type the service appends, and only for those', async (t) => {
  const appended = [
    ...LEAD_EVENT_TYPES,
    ...APPLICATION_EVENT_TYPES,
    ...TASK_EVENT_TYPES,
    ...INVOICE_EVENT_TYPES,
    ...DOCUMENT_EVENT_TYPES,
    ...Object.values(ENDPOINT_EVENTS),
    'list.exported',
  ].sort();
  t.same([...SUMMARISED_EVENT_TYPES].sort(), appended);
  t.same(EVERY_EVENT.map((e) => e.event.type).sort(), appended, 'the examples below cover every one');
});

t.test('every event type is summarised in words, naming its key fact', async (t) => {
  for (const { event, says } of EVERY_EVENT) {
    const summary = summaryOf(event);
    t.ok(summary.trim().length > 0, `${event.type}: not empty`);
    t.notMatch(summary, JSON_MARKS, `${event.type}: no JSON in "${summary}"`);
    t.match(summary, says, `${event.type}: says what happened`);
  }
});

t.test('a lead change names its fields by their labels and the new values it knows', async (t) => {
  const change = (fields: string[], lead: Lead = contacted) =>
    summaryOf({ type: 'lead.updated', data: { payload: { ...lead, changed_fields: fields } } });
  t.equal(change(['stage', 'lost_reason']), 'Changed stage to Contacted, lost reason to none');
  t.equal(
    change(['next_follow_up_at', 'custom_fields'], { ...LEAD, next_follow_up_at: '2026-12-01T09:15:00.000Z' }),
    'Changed next follow-up to 2026-12-01 09:15 UTC, custom fields',
  );
  t.equal(change(['temperature'], LEAD), 'Changed temperature to none');
  t.equal(change(['updated_at']), 'Changed the lead', 'only times that move with every change: nothing to name');
  t.equal(change(['some_new_field']), 'Changed some new field', 'a field this version has no label for');

  const erasure = summaryOf({
    type: 'lead.updated',
    data: { payload: { ...LEAD, full_name: '', changed_fields: ['full_name', 'phone', 'email'] }, erased_at: AT },
  });
  t.equal(erasure, 'Personal data erased', 'an erasure names no field and shows no value');

  t.equal(
    summaryOf({ type: 'lead.assigned', data: { payload: { ...LEAD, owner: RAVI }, previous_owner: null } }),
    'Owner changed: no owner → Ravi Menon (ravi@northstar.example)',
  );
  t.equal(
    summaryOf({ type: 'lead.created', data: { payload: { ...LEAD, owner: null }, message: null } }),
    'Created from source Website at stage New, no owner',
  );
  t.equal(
    summaryOf({ type: 'lead.note_added', data: { at: AT, note: '', author: { type: 'system', name: 'x' } } }),
    'Note added (its text was erased)',
  );
});

t.test('money is shown in major units of its currency; what is not money, as stored', async (t) => {
  const paid = (amount: unknown, currency: unknown) =>
    summaryOf({ type: 'refund.paid', data: { refund_id: 'r1', payload: { amount, currency } } });
  t.equal(paid(1500, 'JPY'), 'Refund r1 of 1500 JPY paid out', 'a currency without fractions');
  t.equal(paid(1234567, 'KWD'), 'Refund r1 of 1234.567 KWD paid out', 'three digits after the point');
  t.equal(paid(5, 'INR'), 'Refund r1 of 0.05 INR paid out');
  t.equal(paid(5, 'XXQ'), 'Refund r1 of 5 XXQ (minor units) paid out', 'no ISO 4217 currency: nothing to format with');
  t.equal(paid(1.5, 'INR'), 'Refund r1 of 1.5 INR (minor units) paid out', 'not an integer: not minor units');
  t.equal(paid(undefined, undefined), 'Refund r1 of an unknown amount (minor units) paid out');
});

t.test('an event type no summary is written for gets a sentence without its data', async (t) => {
  t.equal(summaryOf({ type: 'lead.merged', data: { payload: LEAD } }), 'Event lead.merged recorded');
  t.equal(summaryOf({ type: 'constructor', data: {} }), 'Event constructor recorded', 'no inherited property');
});

/*
 * Event data of any shape: each example's data with fields dropped, set to null or empty text or replaced by other values (text,
 * numbers, lists, objects), and extra fields added, at any depth. Text is drawn without JSON's marks, so a mark in a
 * summary can only come from printing structure.
 */
const word = fc.stringMatching(/^[A-Za-z0-9 _.@-]{0,10}$/);
const anyValue = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    word,
    fc.integer(),
    fc.double({ noNaN: true }),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(word, tie('value'), { maxKeys: 3 }),
  ),
})).value;

/** The data with each member kept, dropped, nulled, emptied or replaced as `choices` say (in turn), plus extra members. */
function reshape(value: unknown, choices: number[], values: unknown[], at = { i: 0 }): unknown {
  const next = () => choices[at.i++ % choices.length]!;
  const other = () => values[at.i++ % values.length];
  if (Array.isArray(value)) return value.map((v) => reshape(v, choices, values, at));
  if (typeof value !== 'object' || value === null) return value;
  const out: [string, unknown][] = [];
  for (const [key, member] of Object.entries(value)) {
    const choice = next();
    if (choice < 5) out.push([key, reshape(member, choices, values, at)]);
    else if (choice === 5) out.push([key, null]);
    else if (choice === 6) out.push([key, other()]);
    else if (choice === 7) out.push([key, '']);
    // 8: dropped
  }
  if (next() === 8) out.push([`extra_${at.i}`, other()]);
  // fromEntries defines each member, so a key such as __proto__ stays a member.
  return Object.fromEntries(out);
}

t.test('any event data: a summary never throws and never prints JSON', async (t) => {
  const types = [...EVERY_EVENT.map((e) => e.event.type), 'lead.merged', 'unknown'];
  await checkProperty(
    t,
    'summaries of reshaped event data',
    fc.property(
      fc.constantFrom(...EVERY_EVENT.map((e) => e.event)),
      fc.constantFrom(...types),
      fc.array(fc.integer({ min: 0, max: 8 }), { minLength: 1, maxLength: 60 }),
      fc.array(anyValue, { minLength: 1, maxLength: 8 }),
      fc.boolean(),
      (event, type, choices, values, sameType) => {
        const data = reshape(event.data, choices, values);
        const summary = summaryOf({ type: sameType ? event.type : type, data });
        if (typeof summary !== 'string' || summary.trim() === '') throw new Error(`empty summary: ${summary}`);
        if (JSON_MARKS.test(summary)) throw new Error(`JSON in the summary: ${summary}`);
      },
    ),
    2000,
  );
  await checkProperty(
    t,
    'summaries of data that is any value at all',
    fc.property(fc.constantFrom(...types), anyValue, (type, data) => {
      const summary = summaryOf({ type, data });
      if (summary.trim() === '' || JSON_MARKS.test(summary)) throw new Error(`not words: ${summary}`);
    }),
    1000,
  );
});

t.test('stages by the names the case gives them; an API key by its name, not its id', async (t) => {
  const opened = {
    type: 'application.opened',
    data: {
      stages: [
        { key: 'profile', name: 'Profile and eligibility' },
        { key: 'visa_filing', name: 'Visa filing' },
      ],
    },
  };
  const names = stageNamesOf(opened);
  t.same(
    [...names],
    [
      ['profile', 'Profile and eligibility'],
      ['visa_filing', 'Visa filing'],
    ],
  );
  t.same([...stageNamesOf({ type: 'lead.created', data: {} })], [], 'only an opening event names stages');
  const moved = {
    type: 'application.stage_changed',
    data: {
      cause: 'manual',
      payload: { stage_change: { from_stage_key: 'profile', to_stage_key: 'visa_filing', direction: 'forward' } },
    },
  };
  t.equal(
    eventSummary(moved, { stageNames: names }),
    'Stage Profile and eligibility → Visa filing (forward, moved by staff)',
  );
  t.equal(eventSummary(moved), 'Stage profile → visa filing (forward, moved by staff)', 'without names: keys in words');
  t.equal(actorText({ type: 'key', key_id: 'k-1', key_name: 'Website form' }), 'API key "Website form"');
  t.equal(actorText({ type: 'key', key_id: 'k-1' }), 'API key k-1', 'the id only when the key has no name');
});
