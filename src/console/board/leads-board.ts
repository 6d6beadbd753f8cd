import type { AppServices } from '../../bootstrap.js';
import type { Lead } from '../../domain/leads/lead.js';
import { can } from '../../identity/permissions.js';
import type { MemberView } from '../context.js';
import { html, type Html } from '../html.js';
import { badge } from '../layout.js';
import { timeZoneOf, when } from '../time.js';
import { ageOf } from './age.js';
import { filterPairs, type BoardFilter, type BoardQuery } from './filter.js';
import { leadCards, leadStageCounts } from './leads-query.js';
import { CARDS_PER_COLUMN, type BoardCard, type BoardColumn } from './model.js';

export const leadBoardPath = (view: MemberView) => `/console/w/${view.workspace.slug}/leads/board`;
const leadsPath = (view: MemberView) => `/console/w/${view.workspace.slug}/leads`;

/** A lead's next follow-up in the workspace's zone, said as overdue when it has passed. */
export function followUpOf(at: string | Date | null, zone: string, now: Date): Html | string {
  if (!at) return 'none';
  const overdue = new Date(at).getTime() < now.getTime();
  return html`${when(at, zone)}${overdue ? html` ${badge('overdue', 'warn')}` : ''}`;
}

function leadCard(view: MemberView, lead: Lead, now: Date, refusals: Record<string, string>): BoardCard {
  const stages = view.workspace.settings.pipeline.stages;
  const zone = timeZoneOf(view.workspace);
  return {
    id: lead.id,
    title: lead.full_name || '(erased)',
    href: `${leadsPath(view)}/${lead.id}`,
    stageKey: lead.stage.key,
    facts: [
      ['Owner', lead.owner?.name ?? 'No owner'],
      ['Follow-up', followUpOf(lead.next_follow_up_at, zone, now)],
      ['In stage', ageOf(new Date(lead.stage_changed_at ?? lead.created_at), now)],
    ],
    targets: can(view.role, 'leads.change')
      ? stages.filter((s) => s.key !== lead.stage.key).map((s) => [s.key, s.name] as const)
      : [],
    refusal: refusals[lead.id],
  };
}

/** The lead board's columns: every stage of the workspace's pipeline, in its order, with counts and first cards. */
export async function leadColumns(
  services: AppServices,
  view: MemberView,
  filter: BoardFilter,
  query: BoardQuery,
  refusals: Record<string, string> = {},
): Promise<BoardColumn[]> {
  const stages = view.workspace.settings.pipeline.stages;
  const keys = stages.map((s) => s.key);
  const [counts, cards] = await Promise.all([
    leadStageCounts(services.pool, view.workspace.id, filter, keys),
    leadCards(services.pool, view.workspace.id, filter, keys, CARDS_PER_COLUMN),
  ]);
  const now = services.now();
  return stages.map((stage) => ({
    key: stage.key,
    name: stage.name,
    count: counts.get(stage.key)?.n ?? 0,
    exact: counts.get(stage.key)?.exact ?? true,
    cards: (cards.get(stage.key) ?? []).map((lead) => leadCard(view, lead, now, refusals)),
    listHref: `${leadsPath(view)}?${new URLSearchParams([['stage', stage.key], ...filterPairs(query)]).toString()}`,
  }));
}
