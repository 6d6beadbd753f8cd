import type { AppServices } from '../../bootstrap.js';
import type { MemberView } from '../context.js';
import { html, type Html } from '../html.js';
import { notice } from '../layout.js';
import { timeZoneOf } from '../time.js';
import { listParams, type ListParams } from './params.js';
import { countMatching, readPage, type Count } from './query.js';
import { listBody } from './render.js';
import type { ListContext, ListSpec, Query } from './spec.js';
import { Where } from './where.js';

export const contextOfList = (view: MemberView, now: Date): ListContext => ({
  view,
  zone: timeZoneOf(view.workspace),
  now,
});

/** The list's filter and sort read from a query string, or the refusals by field. */
export function readQuery<Row>(spec: ListSpec<Row>, ctx: ListContext, query: Query) {
  const params = listParams(spec, query);
  const filtered = spec.filter(query, ctx);
  const where = new Where(ctx.view.workspace.id, spec.scope);
  filtered.apply(where);
  return { params, where, errors: { ...filtered.errors, ...params.errors } };
}

export interface ListAnswer {
  status: number;
  /** The count, the table, the pages; the page module puts its filter form above it. */
  body: Html;
  errors: Record<string, string>;
}

/** A list page's body from its query string: one page of rows, the count, and the controls for the rest. */
export async function renderList<Row>(
  services: Pick<AppServices, 'pool' | 'now'>,
  view: MemberView,
  spec: ListSpec<Row>,
  query: Query,
): Promise<ListAnswer> {
  const ctx = contextOfList(view, services.now());
  const { params, where, errors } = readQuery(spec, ctx, query);
  const failed = Object.keys(errors).length > 0;
  const listErrors = ['sort', 'dir', 'size', 'page'].map((k) => errors[k]).filter(Boolean);
  if (failed) return { status: 400, body: html`${listErrors.map((e) => notice(e, 'alert'))}`, errors };
  const [found, count] = await Promise.all([
    readPage(services.pool, spec, where, params),
    countMatching(services.pool, spec, where),
  ]);
  return { status: 200, body: listBody(ctx, spec, query, params, found, count), errors };
}

export type { Count, ListParams };
