import { Type } from 'typebox';
import type { AppServices } from '../../bootstrap.js';
import type { TypedApp } from '../../http/typed-app.js';
import { can, type Operation } from '../../identity/permissions.js';
import { sendPage, type MemberView } from '../context.js';
import { html, type Html } from '../html.js';
import { phoneText } from '../labels.js';
import { notice, page } from '../layout.js';
import {
  searchable,
  searchApplications,
  searchInvoices,
  searchLeads,
  searchMembers,
  searchTasks,
  searchTerms,
  SEARCH_LIMIT,
  type SearchTerms,
} from '../queries/search.js';
import { viewOf } from '../routes.js';
import { Text, WorkspaceParams } from './record-schemas.js';

/** One group of results: its heading, the operation that lets a member see it, and its rows as links. */
interface Group {
  heading: string;
  operation: Operation;
  find: (services: AppServices, view: MemberView, terms: SearchTerms) => Promise<{ href: string; text: string }[]>;
}

const GROUPS: readonly Group[] = [
  {
    heading: 'Leads',
    operation: 'leads.view',
    find: async (services, view, terms) =>
      (await searchLeads(services.pool, view.workspace.id, terms)).map((l) => ({
        href: `/leads/${l.id}`,
        text: [l.full_name || '(erased)', l.phone ? phoneText(l.phone) : null, l.email, l.stage]
          .filter(Boolean)
          .join(' · '),
      })),
  },
  {
    heading: 'Applications',
    operation: 'applications.view',
    find: async (services, view, terms) =>
      (await searchApplications(services.pool, view.workspace.id, terms)).map((a) => ({
        href: `/applications/${a.id}`,
        text: `${a.case_ref} · ${a.full_name || '(erased)'}`,
      })),
  },
  {
    heading: 'Invoices',
    operation: 'invoices.view',
    find: async (services, view, terms) =>
      (await searchInvoices(services.pool, view.workspace.id, terms)).map((i) => ({
        href: `/invoices/${i.id}`,
        text: `${i.number} · ${i.status.replaceAll('_', ' ')}`,
      })),
  },
  {
    heading: 'Tasks',
    operation: 'tasks.view',
    find: async (services, view, terms) =>
      (await searchTasks(services.pool, view.workspace.id, terms)).map((t) => ({
        href: `/tasks/${t.id}`,
        text: `${t.title} · ${t.status === 'open' ? 'open' : 'done'}`,
      })),
  },
  {
    heading: 'Members',
    operation: 'members.view',
    find: (_services, view, terms) =>
      Promise.resolve(
        searchMembers(view.workspace.settings.users, terms).map((m) => ({ href: '/members', text: m.name })),
      ),
  },
];

/** The groups a role may see, in order: a kind whose operation the table refuses the role is never searched. */
export const searchGroupsFor = (role: MemberView['role']) => GROUPS.filter((g) => can(role, g.operation));

async function resultsPage(
  services: AppServices,
  view: MemberView,
  q: string,
): Promise<{ status: number; body: string }> {
  const terms = searchTerms(q, view.workspace.settings.default_phone_country);
  const frame = { ...view.frame(q ? `Search: ${terms.whole}` : 'Search', 'Search'), query: terms.whole };
  if (!q.trim())
    return {
      status: 200,
      body: page(
        frame,
        html`<p>Type a name, phone, email, case or invoice number, or a task’s title in the search box above.</p>`,
      ),
    };
  if (!searchable(terms))
    return {
      status: 400,
      body: page(frame, notice('Type at least three letters of a word, or three digits of a phone.', 'alert') as Html),
    };
  const base = `/console/w/${view.workspace.slug}`;
  const groups = await Promise.all(
    searchGroupsFor(view.role).map(async (g) => ({ heading: g.heading, rows: await g.find(services, view, terms) })),
  );
  const found = groups.filter((g) => g.rows.length > 0);
  const total = found.reduce((n, g) => n + g.rows.length, 0);
  const body = html`<p class="count" role="status">
      ${total === 0 ? 'Nothing matches.' : `${total} ${total === 1 ? 'match' : 'matches'}, by kind.`}
    </p>
    ${found.map(
      (g) =>
        html`<section aria-labelledby="found-${g.heading.toLowerCase()}">
          <h2 id="found-${g.heading.toLowerCase()}">
            ${g.heading} (${g.rows.length}${g.rows.length >= SEARCH_LIMIT ? '+' : ''})
          </h2>
          <ul class="found">
            ${g.rows.map((r) => html`<li><a href="${base}${r.href}">${r.text}</a></li>`)}
          </ul>
          ${
            g.rows.length >= SEARCH_LIMIT
              ? html`<p class="hint">Showing the first ${SEARCH_LIMIT}: add a word to narrow the search.</p>`
              : ''
          }
        </section>`,
    )}`;
  return { status: 200, body: page(frame, body) };
}

export function registerSearchPages(app: TypedApp, services: AppServices): void {
  app.get(
    '/w/:slug/search',
    {
      schema: { params: WorkspaceParams, querystring: Type.Object({ q: Type.Optional(Text(200)) }) },
      config: { console: { operation: 'workspace.view' } },
    },
    async (request, reply) => {
      const answer = await resultsPage(services, viewOf(request), request.query.q ?? '');
      return sendPage(reply, answer.body, answer.status);
    },
  );
}
