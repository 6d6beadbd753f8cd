import type { MemberView } from '../context.js';
import { html, type Html } from '../html.js';

/** What a board is filtered by, as the lists are: each optional, each read from the query string. */
export interface BoardFilter {
  ownerId?: string | 'none';
  branchId?: string;
  country?: string;
  visaType?: string;
}

export type BoardQuery = Record<string, string | undefined>;

/** The query-string names of a board's filters, in the order a link to the list carries them. */
export const BOARD_FILTER_NAMES = ['owner', 'branch', 'country', 'visa_type'] as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The filter of a board's query string, each value one of the workspace's own choices (a member, a branch, a country,
 * a visa type of its settings); anything else is said back as an error by its field, and nothing is filtered by it.
 */
export function boardFilterOf(
  view: MemberView,
  query: BoardQuery,
): { filter: BoardFilter; errors: Record<string, string> } {
  const s = view.workspace.settings;
  const filter: BoardFilter = {};
  const errors: Record<string, string> = {};
  const { owner, branch, country, visa_type: visaType } = query;
  if (owner === 'none' || (owner && UUID.test(owner) && s.users.some((u) => u.id === owner))) filter.ownerId = owner;
  else if (owner) errors.owner = 'Choose an owner from the list.';
  if (branch && UUID.test(branch) && s.branches.some((b) => b.id === branch)) filter.branchId = branch;
  else if (branch) errors.branch = 'Choose a branch from the list.';
  if (country && s.countries.includes(country)) filter.country = country;
  else if (country) errors.country = 'Choose a country from the list.';
  if (visaType && (s.visa_types as readonly string[]).includes(visaType)) filter.visaType = visaType;
  else if (visaType) errors.visa_type = 'Choose a visa type from the list.';
  return { filter, errors };
}

/** The filter as query-string pairs (for the links to the list and back to the board). */
export function filterPairs(query: BoardQuery): [string, string][] {
  return BOARD_FILTER_NAMES.filter((n) => query[n]).map((n) => [n, query[n]!]);
}

/**
 * SQL conditions of the filter over a leads row named `alias` (its columns `owner_id`, `branch_id`, and the board
 * columns `visa_type`, `country_interest` of migration 174), each value a parameter added through `param`.
 */
export function leadConditions(filter: BoardFilter, alias: string, param: (value: unknown) => string): string[] {
  const where: string[] = [];
  if (filter.ownerId === 'none') where.push(`${alias}.owner_id IS NULL`);
  else if (filter.ownerId) where.push(`${alias}.owner_id = ${param(filter.ownerId)}::uuid`);
  if (filter.branchId) where.push(`${alias}.branch_id = ${param(filter.branchId)}::uuid`);
  if (filter.visaType) where.push(`${alias}.visa_type = ${param(filter.visaType)}`);
  if (filter.country) where.push(`${alias}.country_interest = ${param(filter.country)}`);
  return where;
}

/** The link from a list to its board, with the list's filters the board reads too. */
export function boardLinkOf(base: string, query: BoardQuery, noun: string): Html {
  const kept = new URLSearchParams(filterPairs(query)).toString();
  return html`<p><a href="${base}/board${kept ? `?${kept}` : ''}">See the ${noun} as a board, by stage</a></p>`;
}
