/**
 * The console's records pages with LEADS leads (100,000 unless set) for one user: the lead list with one filter, a
 * search by part of a phone and of an email, a lead's page with a 200-event timeline, an application "as of" a
 * past moment, and the header's search box (two name words in the other order, one common surname, a phone typed
 * with its national prefix), each as the page over HTTP (signed in, p99) beside its database reads alone.
 * `npm run bench:console-records`.
 */
import { randomBytes } from 'node:crypto';
import { convertLeadToApplication } from '../src/commands/applications/convert-lead.js';
import { readApplicationAsOf, readHistoryPage, readLeadAsOf } from '../src/commands/history/history.js';
import { updateLead } from '../src/commands/leads/update-lead.js';
import { staffContext } from '../src/commands/run-command.js';
import { applicationsOfLead, listConsoleLeads } from '../src/console/queries/leads.js';
import {
  searchApplications,
  searchInvoices,
  searchLeads,
  searchTasks,
  searchTerms,
} from '../src/console/queries/search.js';
import { buildApp } from '../src/http/app.js';
import type { LeadSubmission } from '../src/domain/leads/submission.js';
import { findLead } from '../src/projections/leads-queries.js';
import { applyDefinition } from '../src/workspaces/repository.js';
import { demoDefinition } from '../test/support/app.js';
import {
  benchDatabase,
  benchServices,
  consoleCookie,
  consoleOwner,
  measure,
  row,
  seededPerson,
  seedLeads,
} from './support.js';

const LEADS = Number(process.env.LEADS ?? 100_000);
const REQUESTS = Number(process.env.REQUESTS ?? 300);
const TIMELINE = 200;
const PASSWORD = 'bench password long enough';

/** Names as a consultancy's leads have them: 40 given names × 40 surnames, some with accents, each pair ~1/1,600. */
const GIVEN = (
  'Gurpreet Harpreet Manpreet Simran Aman Arjun Priya Ananya Rohan Kavya Zoë José Chloé Renée Amélie Noël Ishaan ' +
  'Meera Vikram Neha Rahul Pooja Sanjay Divya Karan Anjali Nikhil Sneha Aditya Riya Farhan Ayesha Imran Sara Omar ' +
  'Layla Yusuf Mariam Bilal Hina'
).split(' ');
const FAMILY = (
  'Sandhu Gill Dhillon Sidhu Grewal Brar Sharma Verma Gupta Singh Kaur Patel Shah Mehta Iyer Nair Menon Reddy Rao ' +
  'Das Bose Ghosh Khan Qureshi Sheikh Ansari Müller Ångström Núñez Çelik Kowalski Novák Fernández García López ' +
  'Martín Pérez Sánchez Ramírez Torres'
).split(' ');
const nameOf = (i: number) => `${GIVEN[i % GIVEN.length]} ${FAMILY[Math.floor(i / GIVEN.length) % FAMILY.length]}`;

function submission(i: number): LeadSubmission {
  return {
    ...seededPerson(i),
    full_name: nameOf(i),
    country_interest: 'CA',
    visa_type: (['student', 'work', 'pr', 'visitor'] as const)[i % 4]!,
    intake: null,
    course: null,
    date_of_birth: null,
    highest_qualification: null,
    score_percent: null,
    english_test: null,
    work_experience_years: null,
    passport_available: null,
    previous_refusals: null,
    utm: null,
    landing_page_url: null,
    custom_fields: {},
    message: null,
  };
}

async function main(): Promise<void> {
  const db = await benchDatabase(10);
  const { pool } = db;
  const services = await benchServices(db);
  try {
    const def = demoDefinition({ slug: `bench-${randomBytes(3).toString('hex')}`, plan: 'enterprise' });
    const { workspace } = await applyDefinition(pool, def, services.secretBox);
    const { owner } = await consoleOwner(pool, workspace, PASSWORD);

    const seeded = performance.now();
    await seedLeads(pool, workspace, LEADS, submission, Date.now() - LEADS * 1000 - 3_600_000, 'bench');
    // One lead with a 200-event timeline: notes, then its conversion.
    const target = (
      await pool.query<{ id: string }>('SELECT id FROM leads WHERE tenant_id = $1 LIMIT 1', [workspace.id])
    ).rows[0]!.id;
    const actor = { type: 'user' as const, user_id: owner.id, email: owner.email, name: owner.name };
    const context = (now: Date) => staffContext(workspace.id, false, actor, now);
    for (let i = 0; i < TIMELINE - 2; i++)
      await updateLead(services, { workspace, sandbox: false, leadId: target, patch: { note: `Note ${i}` }, context });
    const beforeConversion = new Date();
    await new Promise((r) => setTimeout(r, 5));
    const application = await convertLeadToApplication(services, context(new Date()), workspace, target);
    await pool.query('VACUUM (ANALYZE) leads, events, applications, tasks, invoices');
    console.log(
      `Database: ${db.where}; ${LEADS.toLocaleString('en')} leads seeded in ${((performance.now() - seeded) / 1000).toFixed(1)} s; one lead with ${TIMELINE} events`,
    );

    const app = await buildApp(services, { logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address() as { port: number };
    const origin = `http://127.0.0.1:${address.port}`;
    const cookie = await consoleCookie(origin, owner.email, PASSWORD);
    const page = async (path: string) => {
      const response = await fetch(origin + path, { headers: { cookie } });
      if (response.status !== 200) throw new Error(`${path}: ${response.status}`);
      await response.arrayBuffer();
    };
    const w = `/console/w/${workspace.slug}`;
    const scope = { tenantId: workspace.id, sandbox: false };
    const phonePart = (i: number) =>
      String(10_000 + ((i * 7919) % (LEADS - 10_000)))
        .padStart(6, '0')
        .slice(-6);
    const emailPart = (i: number) => `seed-${String((i * 104_729) % LEADS).padStart(9, '0')}`;
    const asOf = beforeConversion.toISOString();
    const country = workspace.settings.default_phone_country;
    /** Every kind the search box reads for an owner (members are searched in memory). */
    const searchReads = (q: string) => {
      const terms = searchTerms(q, country);
      return Promise.all([
        searchLeads(pool, workspace.id, terms),
        searchApplications(pool, workspace.id, terms),
        searchInvoices(pool, workspace.id, terms),
        searchTasks(pool, workspace.id, terms),
      ]);
    };
    const reversedName = (i: number) =>
      nameOf(i * 7919)
        .split(' ')
        .reverse()
        .join(' ');
    const surname = (i: number) => FAMILY[i % FAMILY.length]!;
    const prefixedPhone = (i: number) => `0${seededPerson((i * 104_729) % LEADS).phone.slice(3)}`;
    const search = (q: string) => page(`${w}/search?q=${encodeURIComponent(q)}`);
    const steps: [string, (i: number) => Promise<unknown>, (i: number) => Promise<unknown>][] = [
      [
        'lead list, one filter (visa type)',
        () => page(`${w}/leads?visa_type=work`),
        () => listConsoleLeads(pool, workspace.id, { visaType: 'work' }, { limit: 50 }),
      ],
      [
        'search by part of a phone',
        (i) => page(`${w}/leads?q=${phonePart(i)}`),
        (i) => listConsoleLeads(pool, workspace.id, { q: phonePart(i) }, { limit: 50 }),
      ],
      [
        'search by part of an email',
        (i) => page(`${w}/leads?q=${emailPart(i)}`),
        (i) => listConsoleLeads(pool, workspace.id, { q: emailPart(i) }, { limit: 50 }),
      ],
      ['search box: two name words, other order', (i) => search(reversedName(i)), (i) => searchReads(reversedName(i))],
      ['search box: one common surname', (i) => search(surname(i)), (i) => searchReads(surname(i))],
      [
        'search box: a phone with its national prefix',
        (i) => search(prefixedPhone(i)),
        (i) => searchReads(prefixedPhone(i)),
      ],
      ['search box: part of a phone', (i) => search(phonePart(i)), (i) => searchReads(phonePart(i))],
      [
        `a lead's page, ${TIMELINE}-event timeline`,
        () => page(`${w}/leads/${target}`),
        () =>
          Promise.all([
            findLead(pool, workspace.id, false, target),
            readHistoryPage(services, scope, 'lead', target, { limit: 10_000 }),
            applicationsOfLead(pool, workspace.id, target),
          ]),
      ],
      [
        'an application as of before its conversion',
        () => page(`${w}/applications/${application.id}?as_of=${encodeURIComponent(asOf)}`),
        () =>
          Promise.all([
            readApplicationAsOf(services, scope, application.id, beforeConversion).catch(() => undefined),
            readLeadAsOf(services, scope, target, beforeConversion),
            readHistoryPage(services, scope, 'application', application.id, { limit: 10_000 }),
          ]),
      ],
    ];
    for (const [label, viaPage, reads] of steps) {
      await measure(20, 1, 30, viaPage); // warm
      console.log(row(`${label}: page`, await measure(REQUESTS, 1, 60, viaPage)));
      console.log(row(`${label}: reads alone`, await measure(REQUESTS, 1, 60, reads)));
    }
    await app.close();
  } finally {
    await services.rateLimits.close();
    await db.close();
  }
}

await main();
