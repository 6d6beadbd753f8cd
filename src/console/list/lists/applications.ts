import { APPLICATION_STATUSES, OUTCOMES } from '../../../domain/applications/types.js';
import { html } from '../../html.js';
import { textColumn, timeColumn } from '../cells.js';
import type { ListContext, ListSpec, Query } from '../spec.js';
import { countryName, FilterSteps, UUID, words } from './shared.js';

export interface ApplicationRow {
  id: string;
  case_ref: string;
  number: number;
  full_name: string;
  stage: string;
  status: string;
  outcome: string | null;
  progress: number;
  module: string | null;
  owner: string | null;
  country: string | null;
  opened_at: Date;
  updated_at: Date;
}

export const APPLICATION_FILTERS = ['q', 'status', 'outcome', 'stage', 'module', 'owner', 'country'] as const;

/** Applications by status, outcome, stage, current module, the lead's owner and country; a search by case or name. */
export function applicationFilter(query: Query, ctx: ListContext): FilterSteps {
  const f = new FilterSteps();
  const flow = ctx.view.workspace.settings.application_workflow;
  f.search(query, `lower(a.case_ref || ' ' || coalesce(l.body->>'full_name', ''))`, 'a case number or a name');
  f.equals(query, 'status', `a.status->>'status'`, APPLICATION_STATUSES);
  f.equals(query, 'outcome', `a.status->>'outcome'`, OUTCOMES);
  f.equals(
    query,
    'stage',
    `a.status->'stage'->>'key'`,
    flow.stages.map((s) => s.key),
  );
  f.equals(
    query,
    'module',
    `a.status->'current_module'->>'key'`,
    flow.modules.map((m) => m.key),
  );
  f.equals(query, 'country', `l.body->>'country_interest'`);
  const owner = query.owner;
  if (owner === 'none') f.step((w) => w.when('l.owner_id IS NULL'));
  else if (owner && UUID.test(owner)) f.step((w) => w.add((n) => `l.owner_id = ${n}::uuid`, owner));
  else if (owner) f.errors.owner = 'Choose one of the options.';
  return f;
}

export const APPLICATIONS: ListSpec<ApplicationRow> = {
  name: 'applications',
  title: 'Applications',
  noun: { one: 'application', many: 'applications' },
  view: 'applications.view',
  from: 'applications a LEFT JOIN leads l ON l.id = a.lead_id AND l.tenant_id = a.tenant_id',
  select: `a.id, a.case_ref, a.number, coalesce(l.body->>'full_name', '') AS full_name,
    a.status->'stage'->>'name' AS stage, a.status->>'status' AS status, a.status->>'outcome' AS outcome,
    (a.status->>'progress')::int AS progress, a.status->'current_module'->>'name' AS module,
    l.body->'owner'->>'name' AS owner, l.body->>'country_interest' AS country,
    a.created_at AS opened_at, a.updated_at`,
  scope: ['a.tenant_id = $1', 'a.sandbox = false'],
  id: { sql: 'a.id', type: 'uuid' },
  person: 'a.lead_id',
  defaultSort: { key: 'case', dir: 'desc' },
  filterNames: APPLICATION_FILTERS,
  filter: applicationFilter,
  rowId: (r) => r.id,
  rowName: (r) => r.case_ref,
  bulk: [
    { action: 'move', label: 'Move to a stage', operation: 'applications.change' },
    { action: 'task', label: 'Add a task', operation: 'tasks.change' },
  ],
  columns: [
    {
      key: 'case',
      label: 'Case',
      sort: { sql: 'a.number', type: 'integer' },
      cell: (r, ctx) => html`<a href="/console/w/${ctx.view.workspace.slug}/applications/${r.id}">${r.case_ref}</a>`,
      text: (r) => r.case_ref,
    },
    textColumn<ApplicationRow>(
      'person',
      'Person',
      (r) => r.full_name || '(erased)',
      `lower(coalesce(l.body->>'full_name', ''))`,
    ),
    {
      key: 'stage',
      label: 'Stage',
      sort: { sql: `coalesce((a.status->'stage'->>'position')::int, 0)`, type: 'integer' },
      cell: (r) => r.stage,
      text: (r) => r.stage,
    },
    {
      key: 'progress',
      label: 'Progress',
      sort: { sql: `coalesce((a.status->>'progress')::int, 0)`, type: 'integer' },
      cell: (r) => `${r.progress}%`,
      text: (r) => r.progress,
    },
    textColumn<ApplicationRow>('status', 'Status', (r) => words(r.status), `coalesce(a.status->>'status', '')`),
    textColumn<ApplicationRow>('outcome', 'Outcome', (r) => words(r.outcome), `coalesce(a.status->>'outcome', '')`),
    textColumn<ApplicationRow>(
      'module',
      'Current module',
      (r) => r.module,
      `coalesce(a.status->'current_module'->>'name', '')`,
    ),
    textColumn<ApplicationRow>('owner', 'Owner', (r) => r.owner, `coalesce(l.body->'owner'->>'name', '')`),
    textColumn<ApplicationRow>(
      'country',
      'Country',
      (r) => countryName(r.country),
      `coalesce(l.body->>'country_interest', '')`,
    ),
    timeColumn<ApplicationRow>('opened', 'Opened', 'a.created_at', (r) => r.opened_at),
    timeColumn<ApplicationRow>('changed', 'Changed', 'a.updated_at', (r) => r.updated_at),
  ],
};
