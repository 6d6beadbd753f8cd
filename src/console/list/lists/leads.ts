import type { Lead } from '../../../domain/leads/lead.js';
import { html } from '../../html.js';
import { likePattern, searchedPart } from '../../queries/leads.js';
import { dayBound } from '../../time.js';
import { textColumn, timeColumn } from '../cells.js';
import type { Filtered, ListContext, ListSpec, Query } from '../spec.js';
import type { Where } from '../where.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The searched text, exactly as migration 220's leads_search_trgm is built over it (or the index is not used). */
const SEARCH_TEXT = `lower(coalesce(full_name, '') || ' ' || coalesce(phone, '') || ' ' || coalesce(email, ''))`;

export interface LeadRow {
  id: string;
  body: Lead;
}

export const LEAD_FILTERS = [
  'q',
  'stage',
  'owner',
  'branch',
  'visa_type',
  'country',
  'source',
  'created_from',
  'created_to',
  'updated_from',
  'updated_to',
] as const;

/** The lead list's filters: the search (three characters or more), the settings' choices and two date ranges. */
export function leadFilter(query: Query, ctx: ListContext): Filtered {
  const errors: Record<string, string> = {};
  const steps: ((w: Where) => void)[] = [];
  const q = (query.q ?? '').trim();
  if (q && q.length < 3) errors.q = 'Enter at least three characters of a name, phone or email.';
  else if (q.length > 100) errors.q = 'Enter at most 100 characters.';
  else if (q) steps.push((w) => w.add((n) => `${SEARCH_TEXT} LIKE ${n}`, likePattern(searchedPart(q))));
  const { stage, owner, branch, visa_type: visaType, source } = query;
  // Stage, visa type, source, owner, branch and the change time are lead_order's columns, read off its indexes.
  if (stage) steps.push((w) => w.add((n) => `stage_key = ${n}`, stage));
  if (owner === 'none') steps.push((w) => w.when('owner_id IS NULL'));
  else if (owner && UUID.test(owner)) steps.push((w) => w.add((n) => `owner_id = ${n}::uuid`, owner));
  if (branch && UUID.test(branch)) steps.push((w) => w.add((n) => `branch_id = ${n}::uuid`, branch));
  if (visaType) steps.push((w) => w.add((n) => `visa_type = ${n}`, visaType));
  // The board's column of migration 174 (the same value as body->>'country_interest').
  if (query.country) steps.push((w) => w.add((n) => `country_interest = ${n}`, query.country));
  if (source) steps.push((w) => w.add((n) => `source_key = ${n}`, source));
  for (const [name, column, end, op] of [
    ['created_from', 'created_at', false, '>='],
    ['created_to', 'created_at', true, '<'],
    ['updated_from', 'updated_at', false, '>='],
    ['updated_to', 'updated_at', true, '<'],
  ] as const) {
    const d = dayBound(query[name], ctx.zone, end);
    if (d === 'invalid') errors[name] = 'Enter a date as year-month-day.';
    else if (d) steps.push((w) => w.add((n) => `${column} ${op} ${n}`, d));
  }
  return { errors, apply: (w) => steps.forEach((step) => step(w)) };
}

const branchName = (ctx: ListContext, lead: Lead) =>
  ctx.view.workspace.settings.branches.find((b) => b.id === lead.branch.id)?.name ?? lead.branch.code;

export const LEADS: ListSpec<LeadRow> = {
  name: 'leads',
  title: 'Leads',
  noun: { one: 'lead', many: 'leads' },
  view: 'leads.view',
  // leads joined with lead_order (migration 220): what changes is filtered and ordered by there.
  from: 'lead_rows',
  select: 'id, body',
  scope: ['tenant_id = $1', 'sandbox = false'],
  id: { sql: 'id', type: 'uuid' },
  person: 'id',
  defaultSort: { key: 'changed', dir: 'desc' },
  filterNames: LEAD_FILTERS,
  filter: leadFilter,
  rowId: (r) => r.id,
  rowName: (r) => r.body.full_name || 'an erased person',
  bulk: [
    { action: 'assign', label: 'Assign an owner', operation: 'leads.change' },
    { action: 'move', label: 'Move to a stage', operation: 'leads.change' },
    { action: 'task', label: 'Add a task', operation: 'tasks.change' },
  ],
  columns: [
    {
      key: 'name',
      label: 'Name',
      // lead_order's sort_name (migration 320): the order beside the workspace condition, so one index gives a page.
      sort: { sql: 'sort_name', type: 'text' },
      cell: (r, ctx) =>
        html`<a href="/console/w/${ctx.view.workspace.slug}/leads/${r.id}">${r.body.full_name || '(erased)'}</a>`,
      text: (r) => r.body.full_name,
    },
    // Phone and email are found by the search box, not sorted: their order sits on leads, away from lead_order's
    // workspace condition, so a sorted page would sort every lead of the workspace.
    textColumn('phone', 'Phone', (r) => r.body.phone),
    textColumn('email', 'Email', (r) => r.body.email),
    // Stage, owner and branch are filters, not sorts: sorting by them parses every matching lead's JSON body
    // (stored as json text), 280 ms at 3,000 matching leads on a busy machine; each filter narrows instead.
    textColumn('stage', 'Stage', (r) => `${r.body.stage.name}${r.body.converted ? ' (converted)' : ''}`),
    textColumn('owner', 'Owner', (r) => r.body.owner?.name),
    textColumn('branch', 'Branch', (r, ctx) => branchName(ctx, r.body)),
    timeColumn<LeadRow>('created', 'Created', 'created_at', (r) => r.body.created_at),
    timeColumn<LeadRow>('changed', 'Changed', 'updated_at', (r) => r.body.updated_at),
  ],
};
