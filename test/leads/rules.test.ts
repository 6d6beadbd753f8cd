import { randomUUID } from 'node:crypto';
import t from 'tap';
import { chooseBranch, chooseOwner } from '../../src/domain/leads/assignment.js';
import { normaliseCountry } from '../../src/domain/leads/country.js';
import { dateOfBirthProblem, isCalendarDate } from '../../src/domain/leads/dates.js';
import { normaliseEmail } from '../../src/domain/leads/email.js';
import { normalisePhone } from '../../src/domain/leads/phone.js';
import { scoreLead } from '../../src/domain/leads/scoring.js';
import { spamReason } from '../../src/intake/spam.js';
import { requestHash } from '../../src/intake/idempotency.js';
import { settingsFromDefinition } from '../../src/workspaces/repository.js';
import { SecretBox } from '../../src/shared/secret-box.js';
import { decodeCursor, encodeCursor } from '../../src/intake/cursor.js';
import { demoDefinition } from '../support/app.js';

const box = new SecretBox(Buffer.alloc(32, 3));
const settings = settingsFromDefinition(demoDefinition(), undefined, box);

t.test('email rules', async (t) => {
  t.equal(normaliseEmail(' A.B+tag@Example.co.IN '), 'a.b+tag@example.co.in');
  for (const bad of [
    'a@b',
    'a b@example.com',
    '@example.com',
    'a@example',
    'a..b@example.com',
    '.a@example.com',
    'a@-x.com',
    'a@example.c0m',
  ])
    t.equal(normaliseEmail(bad), undefined, bad);
});

t.test('phone and country rules', async (t) => {
  t.equal(normalisePhone('9876543210', 'IN'), '+919876543210');
  t.equal(normalisePhone('020 7946 0958', 'GB'), '+442079460958');
  t.equal(
    normalisePhone('98765 43210', 'GB'),
    undefined,
    'read with the default country: an Indian mobile is no UK number',
  );
  t.equal(
    normalisePhone('+91 98765 43210', 'GB'),
    '+919876543210',
    'an international prefix wins over the default country',
  );
  t.equal(normaliseCountry('gb'), 'GB');
  for (const bad of ['XX', 'EU', 'ZZ', 'GBR', 'g']) t.equal(normaliseCountry(bad), undefined, bad);
});

t.test('dates', async (t) => {
  t.ok(isCalendarDate('2024-02-29'));
  t.notOk(isCalendarDate('2023-02-29'));
  t.notOk(isCalendarDate('2023-2-1'));
  const now = new Date('2026-11-01T00:00:00Z');
  t.equal(dateOfBirthProblem('1906-11-01', now), undefined, 'exactly 120 years');
  t.equal(dateOfBirthProblem('1906-10-31', now), 'is more than 120 years ago');
  t.equal(dateOfBirthProblem('2026-11-02', now), 'cannot be in the future');
});

t.test('scoring rule', async (t) => {
  const empty = {
    phone: null,
    email: null,
    visa_type: null,
    country_interest: null,
    intake: null,
    course: null,
    highest_qualification: null,
    english_test: null,
    passport_available: null,
    work_experience_years: null,
    previous_refusals: null,
  };
  t.equal(scoreLead(empty), 0);
  t.equal(scoreLead({ ...empty, email: 'a@b.co' }), 10);
  t.equal(scoreLead({ ...empty, phone: '+1', highest_qualification: 'diploma', work_experience_years: 2 }), 30);
  t.equal(scoreLead({ ...empty, phone: '+1', previous_refusals: 1 }), 10);
  t.equal(scoreLead({ ...empty, email: 'x', previous_refusals: 20 }), 0, 'never below 0');
  const full = {
    phone: '+1',
    email: 'e',
    visa_type: 'student' as const,
    country_interest: 'CA',
    intake: '2027-01',
    course: 'MBA',
    highest_qualification: 'masters' as const,
    english_test: { type: 'IELTS' as const, overall: 8 },
    passport_available: true,
    work_experience_years: 5,
    previous_refusals: 0,
  };
  t.equal(scoreLead(full), 100, 'never above 100');
});

t.test('assignment rule', async (t) => {
  t.equal(chooseBranch(settings, 'bengaluru').code, 'BLR', 'a city naming a branch');
  t.equal(chooseBranch(settings, 'blr').code, 'BLR', 'or its code');
  t.equal(chooseBranch(settings, 'Pune').code, 'DEL', 'else the first branch');
  t.equal(chooseBranch(settings, null).code, 'DEL');
  const del = settings.branches[0]!.id;
  const owners = new Map<string, number>();
  for (let i = 0; i < 200; i++) {
    const owner = chooseOwner(settings, del, randomUUID())!;
    owners.set(owner.email, (owners.get(owner.email) ?? 0) + 1);
  }
  t.same(
    [...owners.keys()],
    ['vikram@northstar.example'],
    'only the active counsellor of the branch (not the owner, not the inactive one)',
  );
  const twoCounsellors = {
    ...settings,
    users: [
      ...settings.users,
      {
        id: randomUUID(),
        name: 'New Hire',
        email: 'new@northstar.example',
        role: 'counsellor' as const,
        branch_id: del,
        active: true,
      },
    ],
  };
  const spread = new Map<string, number>();
  for (let i = 0; i < 400; i++) {
    const owner = chooseOwner(twoCounsellors, del, randomUUID())!;
    spread.set(owner.email, (spread.get(owner.email) ?? 0) + 1);
  }
  t.equal(spread.size, 2);
  t.ok(
    [...spread.values()].every((n) => n > 140),
    'leads spread over the counsellors',
  );
  const id = randomUUID();
  t.equal(
    chooseOwner(twoCounsellors, del, id),
    chooseOwner(twoCounsellors, del, id),
    'the same lead always gets the same owner',
  );
  const noCounsellors = {
    ...settings,
    users: settings.users.map((u) => (u.role === 'counsellor' ? { ...u, active: false } : u)),
  };
  t.equal(
    chooseOwner(noCounsellors, del, id)!.email,
    'asha@northstar.example',
    'without counsellors another active user of the branch',
  );
  t.equal(chooseOwner(noCounsellors, settings.branches[1]!.id, id), null, 'nobody active: no owner');
});

t.test('spam rules and request fingerprints', async (t) => {
  t.equal(spamReason({ full_name: 'A', website: ' ' }), undefined, 'a blank honeypot');
  t.equal(spamReason({ full_name: 'A', website: 'x' }), 'honeypot');
  t.equal(spamReason({ full_name: 'visit https://x.example' }), 'link_in_name');
  t.equal(spamReason({ full_name: 'A', message: 'www.a www.b www.c' }), undefined);
  t.equal(spamReason({ full_name: 'A', message: 'www.a www.b www.c www.d' }), 'links_in_message');
  t.equal(requestHash({ a: 1, b: { c: 2, d: [1, 2] } }), requestHash({ b: { d: [1, 2], c: 2 }, a: 1 }));
  t.not(requestHash({ a: 1 }), requestHash({ a: 2 }));
});

t.test('cursors', async (t) => {
  const tenant = randomUUID();
  const position = { updatedAt: new Date('2026-11-01T10:00:00.123Z'), id: randomUUID() };
  const cursor = encodeCursor(box, tenant, false, position);
  t.ok(cursor.length <= 200);
  t.match(cursor, /^[A-Za-z0-9_-]+$/, 'safe in a query string');
  t.same(decodeCursor(box, tenant, false, cursor), position);
  t.equal(decodeCursor(box, tenant, true, cursor), undefined);
  t.equal(decodeCursor(box, randomUUID(), false, cursor), undefined);
  t.equal(
    decodeCursor(new SecretBox(Buffer.alloc(32, 4)), tenant, false, cursor),
    undefined,
    "another installation's key",
  );
});
