/**
 * The console's records pages with LEADS leads (100,000 unless set) for one user: the lead list with one filter, a
 * search by part of a phone and of an email, a lead's page with a 200-event timeline and an application "as of" a
 * past moment, and the counted lead lists (a page and its count, sorted several ways), each as the page over HTTP
 * (signed in, p99) beside its database reads alone. `npm run bench:console-records` (LEADS=300000 for the lists' goal).
 */
import { randomBytes } from 'node:crypto';
import { convertLeadToApplication } from '../src/commands/applications/convert-lead.js';
import { readApplicationAsOf, readHistoryPage, readLeadAsOf } from '../src/commands/history/history.js';
import { updateLead } from '../src/commands/leads/update-lead.js';
import { staffContext } from '../src/commands/run-command.js';
import { applicationsOfLead, listConsoleLeads } from '../src/console/queries/leads.js';
import type { MemberView } from '../src/console/context.js';
import { readQuery } from '../src/console/list/component.js';
import { LEADS as LEADS_LIST } from '../src/console/list/lists/leads.js';
import { countMatching, readPage } from '../src/console/list/query.js';
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

function submission(i: number): LeadSubmission {
  return {
    ...seededPerson(i),
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
    await pool.query('VACUUM (ANALYZE) leads, events, applications');
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
    // The counted lists: a page and its count as the list component reads them (the count an estimate above 10,000).
    const member = workspace.settings.users.find((u) => u.role === 'owner')!;
    const view = { workspace, member, role: 'owner', signedIn: { csrf: '' }, frame: () => ({ title: '' }) };
    const listReads = (query: Record<string, string>) => async () => {
      const ctx = { view: view as unknown as MemberView, zone: 'UTC', now: new Date() };
      const { params, where } = readQuery(LEADS_LIST, ctx, query);
      return Promise.all([readPage(pool, LEADS_LIST, where, params), countMatching(pool, LEADS_LIST, where)]);
    };
    const counted: [string, Record<string, string>][] = [
      ['counted lead list, newest change first', {}],
      ['counted lead list by name', { sort: 'name', dir: 'asc' }],
      ['counted lead list by phone, one filter', { sort: 'phone', dir: 'asc', visa_type: 'work' }],
      ['counted lead list, 200 a page, by creation', { sort: 'created', dir: 'desc', size: '200' }],
    ];
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
    for (const [label, query] of counted)
      steps.push([label, () => page(`${w}/leads?${new URLSearchParams(query).toString()}`), listReads(query)]);
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
