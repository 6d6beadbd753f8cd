import t from 'tap';
import { bodyChecker } from '../../src/http/body-check.js';
import { CreateTaskBody, ChangeTaskBody } from '../../src/http/schemas/task.js';
import { IssueInvoiceBody } from '../../src/http/schemas/invoice.js';
import { EventListQuery } from '../../src/http/schemas/event.js';
import { withStatedRules } from '../../src/http/stated-rules.js';
import { AsOfQuery } from '../../src/schemas/history.js';
import { LeadCreate } from '../../src/schemas/lead.js';
import type { TSchema } from 'typebox';

/**
 * The rules the request schemas now state with anyOf, oneOf and const are answered as the service answered them
 * before (the field named, the same words): src/http/union-errors.ts turns Ajv's union errors into field errors.
 */
const LEAD = { full_name: 'A Person', consent: true };
const SUBJECT = '0190a5c4-8c1e-7000-8000-000000000001';

t.test('a phone or an email: both fields named, whatever makes the contact missing', async (t) => {
  const problems = bodyChecker(LeadCreate);
  for (const body of [
    LEAD,
    { ...LEAD, phone: '', email: '' },
    { ...LEAD, phone: null, email: null },
    { ...LEAD, phone: '   ' },
    { ...LEAD, email: '\t\n' },
  ])
    t.same(
      problems(body),
      { phone: 'a phone or an email is required', email: 'a phone or an email is required' },
      JSON.stringify(body),
    );
  t.same(problems({ ...LEAD, email: 'a@example.org' }), {}, 'an email alone');
  t.same(problems({ ...LEAD, phone: '+44 20 7946 0958' }), {}, 'a phone alone');
  t.same(
    problems({ ...LEAD, phone: 'x'.repeat(40), email: 'a@example.org' }),
    { phone: 'must NOT have more than 32 characters' },
    "a field's own problem is its answer",
  );
  t.same(
    problems({ ...LEAD, phone: 5 }),
    { phone: 'must be string,null', email: 'a phone or an email is required' },
    'a phone of the wrong type is named for its type; the email for the rule',
  );
});

t.test('consent: const true, answered "must be true"', async (t) => {
  const problems = bodyChecker(LeadCreate);
  t.same(problems({ ...LEAD, email: 'a@example.org', consent: false }), { consent: 'must be true' });
  t.same(problems({ full_name: 'A', email: 'a@example.org' }), { consent: 'is required' });
});

t.test('exactly one of lead_id and application_id: named on lead_id, as subjectOf names it', async (t) => {
  const task = bodyChecker(CreateTaskBody);
  const invoice = bodyChecker(IssueInvoiceBody);
  const rule = { lead_id: 'exactly one of lead_id and application_id' };
  const taskBody = { title: 'Call', due_at: '2026-12-01T10:00:00Z' };
  const invoiceBody = {
    currency: 'INR',
    line_items: [{ description: 'Fee', quantity: 1, unit_amount: 100 }],
    due_date: '2026-12-01',
  };
  for (const [name, check, body] of [
    ['task', task, taskBody],
    ['invoice', invoice, invoiceBody],
  ] as const) {
    t.same(check(body), rule, `${name}: neither`);
    t.same(check({ ...body, lead_id: SUBJECT, application_id: SUBJECT }), rule, `${name}: both`);
    t.same(check({ ...body, lead_id: SUBJECT }), {}, `${name}: a lead`);
    t.same(check({ ...body, application_id: SUBJECT }), {}, `${name}: an application`);
    t.same(check({ ...body, lead_id: 'nope' }), { lead_id: 'must match format "uuid"' }, `${name}: a malformed id`);
  }
});

t.test('T | null with a non-null value reports T: an assignee 0@com names the email format', async (t) => {
  const change = bodyChecker(ChangeTaskBody);
  t.same(change({ assignee: '0@com' }), { assignee: 'must match format "email"' });
  t.same(change({ assignee: 12 }), { assignee: 'must be string' });
  t.same(change({ assignee: null }), {}, 'null unassigns');
});

t.test("a union of constants lists them; stated rules are answered in the edge checks' words", async (t) => {
  t.same(bodyChecker(EventListQuery)({ order: 'sideways' }), { order: 'must be one of: desc, asc' });
  const stated = bodyChecker(withStatedRules(AsOfQuery) as TSchema);
  t.match(stated({ as_of: '2026-01-01T00:00:00.1234Z' }), { as_of: /^must be a date-time like/ });
  t.match(stated({ as_of: '0000-06-01T00:00:00Z' }), { as_of: /between the years 0001 and 9999/ });
  const lead = bodyChecker(withStatedRules(LeadCreate) as TSchema);
  t.same(lead({ ...LEAD, email: 'a@example.org', city: 'a\u0000b' }), {
    city: 'contains a NUL character (U+0000), which is not allowed',
  });
});
