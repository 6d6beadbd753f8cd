/**
 * The console's records pages with LEADS leads (100,000 unless set) for one user: the lead list with one filter, a
 * search by part of a phone and of an email, a lead's page with a 200-event timeline, an application "as of" a
 * past moment, the lead board (unfiltered, by one owner, by visa type and country: the counts of every stage and
 * the first 20 cards of each) and the header's search box (two name words in the other order, one common surname, a
 * phone typed with its national prefix), each as the page over HTTP (signed in, p99) beside its database reads
 * alone; then a bulk assignment of BULK leads (1,000 unless set) run as a job to its end.
 * The counted lead lists (a page and its count, sorted several ways, and filtered by a common and a rare stage)
 * too. STEPS=board (any part of the steps' labels) runs only the steps it names. `npm run bench:console-records`.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { convertLeadToApplication } from '../src/commands/applications/convert-lead.js';
import { readApplicationAsOf, readHistoryPage, readLeadAsOf } from '../src/commands/history/history.js';
import { updateLead } from '../src/commands/leads/update-lead.js';
import { staffContext } from '../src/commands/run-command.js';
import { leadCards, leadStageCounts } from '../src/console/board/leads-query.js';
import type { BoardFilter } from '../src/console/board/filter.js';
import { applicationsOfLead } from '../src/console/queries/leads.js';
import type { MemberView } from '../src/console/context.js';
import { readQuery } from '../src/console/list/component.js';
import { LEADS as LEADS_LIST } from '../src/console/list/lists/leads.js';
import { countMatching, readPage } from '../src/console/list/query.js';
import {
  searchApplications,
  searchInvoices,
  searchLeads,
  searchTasks,
  searchTerms,
} from '../src/console/queries/search.js';
import { buildApp } from '../src/http/app.js';
import { benchBulkAssign } from './bulk-assign.js';
import type { LeadSubmission } from '../src/domain/leads/submission.js';
import { findLead } from '../src/projections/leads-queries.js';
import { applyDefinition } from '../src/workspaces/repository.js';
import type { Workspace } from '../src/workspaces/workspace.js';
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
/** Leads in the bulk assignment step (the console's 1,000-lead bulk action). */
const BULK = Number(process.env.BULK ?? 1000);
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
    await spreadOverTheBoard(pool, workspace);
    // As autovacuum would after the seeding (the machine's server runs with it off): lead_order holds the columns the
    // lists filter and order by, and without its statistics a filter on visa type was planned as four rows.
    await pool.query('VACUUM (ANALYZE) leads, lead_order, events, applications, tasks, invoices');
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
    // The counted lists: a page and its count as the list component reads them (the count an estimate above 10,000).
    const member = workspace.settings.users.find((u) => u.role === 'owner')!;
    const view = { workspace, member, role: 'owner', signedIn: { csrf: '' }, frame: () => ({ title: '' }) };
    const listReads = (query: Record<string, string>) => async () => {
      const ctx = { view: view as unknown as MemberView, zone: 'UTC', now: new Date() };
      const { params, where } = readQuery(LEADS_LIST, ctx, query);
      return Promise.all([readPage(pool, LEADS_LIST, where, params), countMatching(pool, LEADS_LIST, where)]);
    };
    // A page alone, as the list reads it (its query without the count).
    const listPage = (query: Record<string, string>) => {
      const ctx = { view: view as unknown as MemberView, zone: 'UTC', now: new Date() };
      const { params, where } = readQuery(LEADS_LIST, ctx, query);
      return readPage(pool, LEADS_LIST, where, params);
    };
    const counted: [string, Record<string, string>][] = [
      ['counted lead list, newest change first', {}],
      ['counted lead list by name', { sort: 'name', dir: 'asc' }],
      ['counted lead list by name, one filter', { sort: 'name', dir: 'asc', visa_type: 'work' }],
      ['counted lead list, 200 a page, by creation', { sort: 'created', dir: 'desc', size: '200' }],
      // A common stage (an eighth of the leads: counted to the cap) and a rare one (the one converted lead).
      ['counted lead list, one common stage', { stage: 'new' }],
      ['counted lead list, one rare stage', { stage: 'converted' }],
    ];
    const steps: [string, (i: number) => Promise<unknown>, (i: number) => Promise<unknown>][] = [
      [
        'lead list, one filter (visa type)',
        () => page(`${w}/leads?visa_type=work`),
        () => listPage({ visa_type: 'work' }),
      ],
      ['search by part of a phone', (i) => page(`${w}/leads?q=${phonePart(i)}`), (i) => listPage({ q: phonePart(i) })],
      ['search by part of an email', (i) => page(`${w}/leads?q=${emailPart(i)}`), (i) => listPage({ q: emailPart(i) })],
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
    const stageKeys = workspace.settings.pipeline.stages.map((stage) => stage.key);
    const boardReads = (filter: BoardFilter) => () =>
      Promise.all([
        leadStageCounts(pool, workspace.id, filter, stageKeys),
        leadCards(pool, workspace.id, filter, stageKeys, 20),
      ]);
    const counsellor = workspace.settings.users.find((u) => u.role === 'counsellor') ?? owner;
    steps.push(
      ['lead board, no filter', () => page(`${w}/leads/board`), boardReads({})],
      [
        'lead board, one owner',
        () => page(`${w}/leads/board?owner=${counsellor.id}`),
        boardReads({ ownerId: counsellor.id }),
      ],
      [
        'lead board, visa type and country',
        () => page(`${w}/leads/board?visa_type=work&country=AU`),
        boardReads({ visaType: 'work', country: 'AU' }),
      ],
    );
    for (const [label, query] of counted)
      steps.push([label, () => page(`${w}/leads?${new URLSearchParams(query).toString()}`), listReads(query)]);
    const only = process.env.STEPS;
    for (const [label, viaPage, reads] of steps.filter(([label]) => !only || label.includes(only))) {
      await measure(20, 1, 30, viaPage); // warm
      console.log(row(`${label}: page`, await measure(REQUESTS, 1, 60, viaPage)));
      console.log(row(`${label}: reads alone`, await measure(REQUESTS, 1, 60, reads)));
    }
    await app.close();
    const bulk = await benchBulkAssign(services, pool, workspace, BULK);
    console.log(
      `bulk assignment of ${bulk.total} leads (one job, one worker): ${bulk.seconds.toFixed(2)} s, ${(bulk.total / bulk.seconds).toFixed(0)} leads/s; done ${bulk.done}, refused ${bulk.refused}, unchanged ${bulk.skipped}`,
    );
  } finally {
    await services.rateLimits.close();
    await db.close();
  }
}

/**
 * The seed writes every lead as new and unowned: spread them over the pipeline's stages (half in the lost stage, as
 * a workspace's years of enquiries are), its members who may own leads and five countries, as updates would.
 */
async function spreadOverTheBoard(pool: pg.Pool, workspace: Workspace): Promise<void> {
  const stages = workspace.settings.pipeline.stages;
  const lost = stages.find((s) => s.lost) ?? stages.at(-1)!;
  const open = stages.filter((s) => s !== lost);
  const owners = workspace.settings.users.filter((u) => u.active && u.role !== 'viewer');
  await pool.query(
    `WITH picked AS (
       SELECT id, abs(hashtext(id::text)) AS h FROM leads WHERE tenant_id = $1 AND sandbox = false AND converted = false
     ), chosen AS (
       SELECT p.id,
              CASE WHEN p.h % 2 = 0 THEN $2::jsonb ELSE ($3::jsonb)->((p.h / 2) % jsonb_array_length($3::jsonb))::int END AS stage,
              ($4::jsonb)->((p.h / 7) % jsonb_array_length($4::jsonb))::int AS owner,
              (ARRAY['CA', 'AU', 'GB', 'US', 'NZ'])[1 + (p.h / 11) % 5] AS country
         FROM picked p
     )
     UPDATE leads l
        SET owner_id = (c.owner->>'id')::uuid,
            body = jsonb_set(jsonb_set(jsonb_set(l.body::jsonb, '{stage}', c.stage), '{owner}', c.owner),
                             '{country_interest}', to_jsonb(c.country))::json
       FROM chosen c WHERE l.id = c.id`,
    [
      workspace.id,
      JSON.stringify({ key: lost.key, name: lost.name }),
      JSON.stringify(open.map((s) => ({ key: s.key, name: s.name }))),
      JSON.stringify(owners.map((u) => ({ id: u.id, name: u.name, email: u.email }))),
    ],
  );
}

await main();
