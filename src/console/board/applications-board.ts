import type { AppServices } from '../../bootstrap.js';
import { can } from '../../identity/permissions.js';
import type { MemberView } from '../context.js';
import { badge } from '../layout.js';
import { timeZoneOf } from '../time.js';
import { html } from '../html.js';
import { ageOf } from './age.js';
import { applicationCards, applicationStageCounts, type ApplicationCardRow } from './applications-query.js';
import { filterPairs, type BoardFilter, type BoardQuery } from './filter.js';
import { followUpOf } from './leads-board.js';
import { CARDS_PER_COLUMN, type BoardCard, type BoardColumn } from './model.js';

export const applicationBoardPath = (view: MemberView) => `/console/w/${view.workspace.slug}/applications/board`;
const applicationsPath = (view: MemberView) => `/console/w/${view.workspace.slug}/applications`;

function applicationCard(
  view: MemberView,
  row: ApplicationCardRow,
  stageKey: string,
  now: Date,
  refusals: Record<string, string>,
): BoardCard {
  const lead = row.lead;
  return {
    id: row.id,
    title: `${row.case_ref} · ${lead?.full_name || '(erased)'}`,
    href: `${applicationsPath(view)}/${row.id}`,
    stageKey,
    facts: [
      ['Owner', lead?.owner?.name ?? 'No owner'],
      ['Follow-up', followUpOf(row.follow_up, timeZoneOf(view.workspace), now)],
      ['In stage', row.stage_since ? ageOf(new Date(row.stage_since), now) : '—'],
      ...(row.status === 'active'
        ? []
        : [['Status', html`${badge(row.status.replaceAll('_', ' '), 'neutral')}`] as const]),
    ],
    // The case's own stages (as its workflow was when it was opened) are where it may go.
    targets: can(view.role, 'applications.change')
      ? row.stages.filter((s) => s.key !== stageKey).map((s) => [s.key, s.name] as const)
      : [],
    refusal: refusals[row.id],
  };
}

/** The applications board's columns: the workspace's workflow stages in order, with counts and first cards. */
export async function applicationColumns(
  services: AppServices,
  view: MemberView,
  filter: BoardFilter,
  query: BoardQuery,
  refusals: Record<string, string> = {},
): Promise<BoardColumn[]> {
  const stages = [...view.workspace.settings.application_workflow.stages].sort((a, b) => a.position - b.position);
  const keys = stages.map((s) => s.key);
  const [counts, cards] = await Promise.all([
    applicationStageCounts(services.pool, view.workspace.id, filter),
    applicationCards(services.pool, view.workspace.id, filter, keys, CARDS_PER_COLUMN),
  ]);
  const now = services.now();
  return stages.map((stage) => ({
    key: stage.key,
    name: stage.name,
    count: counts.get(stage.key) ?? 0,
    exact: true,
    cards: (cards.get(stage.key) ?? []).map((row) => applicationCard(view, row, stage.key, now, refusals)),
    listHref: `${applicationsPath(view)}?${new URLSearchParams([['stage', stage.key], ...filterPairs(query)]).toString()}`,
  }));
}
