import { can } from '../../identity/permissions.js';
import { html, type Html } from '../html.js';
import { csrfField } from '../layout.js';
import { encodePlace, PAGE_SIZES, type ListParams } from './params.js';
import type { Count, PageOfRows } from './query.js';
import type { Column, ListContext, ListSpec, Query } from './spec.js';

export const listBase = (ctx: ListContext, spec: Pick<ListSpec<unknown>, 'name' | 'within'>) =>
  `/console/w/${ctx.view.workspace.slug}/${spec.within?.path ?? spec.name}`;

/** The query string's filters as they were sent (each non-empty one the list names), in its order. */
export function keptFilters(spec: Pick<ListSpec<unknown>, 'filterNames'>, query: Query): [string, string][] {
  return spec.filterNames.filter((n) => query[n]).map((n) => [n, query[n]!]);
}

/** The filter and the sort (not the page): what a link to another page or a selection's `query` keeps. */
export function filterAndSort<Row>(spec: ListSpec<Row>, query: Query, p: ListParams<Row>): [string, string][] {
  const kept = keptFilters(spec, query);
  const isDefault = p.column.key === spec.defaultSort.key && p.dir === spec.defaultSort.dir;
  if (!isDefault) kept.push(['sort', p.column.key], ['dir', p.dir]);
  if (p.size !== 50) kept.push(['size', String(p.size)]);
  return kept;
}

const link = (base: string, parts: [string, string][]) =>
  parts.length ? `${base}?${new URLSearchParams(parts).toString()}` : base;

/** "1 lead", "230 leads", "about 48,000 leads": an estimate says so. */
export function countWords(count: Count, noun: { one: string; many: string }): string {
  const n = count.exact ? count.n : Number(count.n.toPrecision(2));
  const words = `${n.toLocaleString('en-GB')} ${n === 1 ? noun.one : noun.many}`;
  return count.exact ? words : `about ${words} (an estimate: over ${(10_000).toLocaleString('en-GB')} match)`;
}

/** A sortable heading: a link that sorts by it (down again when it is the sort, else up), its state said aloud. */
function heading<Row>(ctx: ListContext, spec: ListSpec<Row>, query: Query, p: ListParams<Row>, c: Column<Row>): Html {
  if (!c.sort) return html`<th scope="col">${c.label}</th>`;
  const current = c.key === p.column.key;
  const next = current && p.dir === 'asc' ? 'desc' : 'asc';
  const parts = keptFilters(spec, query);
  parts.push(['sort', c.key], ['dir', next]);
  if (p.size !== 50) parts.push(['size', String(p.size)]);
  const state = current ? (p.dir === 'asc' ? 'ascending' : 'descending') : undefined;
  return html`<th scope="col" ${state ? html`aria-sort="${state}"` : ''}>
    <a href="${link(listBase(ctx, spec), parts)}"
      >${c.label}<span aria-hidden="true">${current ? (p.dir === 'asc' ? ' ▲' : ' ▼') : ''}</span
      ><span class="visually-hidden"> (sort ${next === 'asc' ? 'up' : 'down'})</span></a
    >
  </th>`;
}

/** The columns the member in view sees (a column may need an operation). */
export const visibleColumns = <Row>(ctx: ListContext, spec: ListSpec<Row>) =>
  spec.columns.filter((c) => !c.operation || can(ctx.view.role, c.operation));

/** The bulk actions the member's role may do on this list, and whether they may export it. */
export function selectionRights<Row>(ctx: ListContext, spec: ListSpec<Row>) {
  return {
    actions: (spec.bulk ?? []).filter((a) => can(ctx.view.role, a.operation)),
    exports: can(ctx.view.role, 'lists.export'),
  };
}

function rowsTable<Row>(
  ctx: ListContext,
  spec: ListSpec<Row>,
  query: Query,
  p: ListParams<Row>,
  rows: readonly Row[],
  selectable: boolean,
): Html {
  const columns = visibleColumns(ctx, spec);
  const checked = query.select === 'page';
  const caption = `${spec.title}, by ${p.column.label.toLowerCase()} ${p.dir === 'asc' ? 'ascending' : 'descending'}`;
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="${caption}">
    <table>
      <caption>
        ${caption}
      </caption>
      <thead>
        <tr>
          ${selectable ? html`<th scope="col"><span class="visually-hidden">Selected</span></th>` : ''}
          ${columns.map((c) => heading(ctx, spec, query, p, c))}
        </tr>
      </thead>
      <tbody>
        ${rows.map((row) => {
          const id = spec.rowId(row);
          return html`<tr>
            ${
              selectable
                ? html`<td>
                    <input type="checkbox" name="ids" value="${id}" id="select-${id}" ${checked ? html`checked` : ''} />
                    <label for="select-${id}" class="visually-hidden">Select ${spec.rowName(row)}</label>
                  </td>`
                : ''
            }
            ${columns.map((c) => html`<td>${c.cell(row, ctx)}</td>`)}
          </tr>`;
        })}
      </tbody>
    </table>
  </div>`;
}

/** Previous and next, as links keeping the filter, sort and size. */
function pager<Row>(ctx: ListContext, spec: ListSpec<Row>, query: Query, p: ListParams<Row>, found: PageOfRows<Row>) {
  const kept = filterAndSort(spec, query, p);
  const base = listBase(ctx, spec);
  const at = (side: 'after' | 'before', place: { value: string; id: string }) =>
    link(base, [...kept, [side, encodePlace(p.column.key, p.dir, place.value, place.id)]]);
  const previous =
    found.hasPrevious && found.first
      ? html`<a href="${at('before', found.first)}" rel="prev">Previous ${p.size}</a>`
      : p.bound
        ? html`<a href="${link(base, kept)}">First page</a>`
        : '';
  const next =
    found.hasNext && found.last ? html`<a href="${at('after', found.last)}" rel="next">Next ${p.size}</a>` : '';
  if (!previous && !next) return '';
  return html`<nav class="pager" aria-label="Pages of ${spec.title.toLowerCase()}">${previous} ${next}</nav>`;
}

/** The page size: a small GET form keeping the filter and the sort (the page starts again at the first). */
function sizeForm<Row>(ctx: ListContext, spec: ListSpec<Row>, query: Query, p: ListParams<Row>): Html {
  const kept = filterAndSort(spec, query, p).filter(([n]) => n !== 'size');
  return html`<form method="get" action="${listBase(ctx, spec)}" class="page-size">
    ${kept.map(([n, v]) => html`<input type="hidden" name="${n}" value="${v}" />`)}
    <label for="f-size-${spec.name}" class="inline">Rows a page</label>
    <select id="f-size-${spec.name}" name="size">
      ${PAGE_SIZES.map((s) => html`<option value="${s}" ${s === p.size ? html`selected` : ''}>${s}</option>`)}
    </select>
    <button type="submit">Show</button>
  </form>`;
}

/** What a selection form offers: the rows ticked or all matching, the actions the role may do, a CSV file. */
function selectionControls<Row>(
  ctx: ListContext,
  spec: ListSpec<Row>,
  query: Query,
  p: ListParams<Row>,
  count: Count,
): Html {
  const rights = selectionRights(ctx, spec);
  const base = listBase(ctx, spec);
  const selectPage = link(base, [...filterAndSort(spec, query, p), ['select', query.select === 'page' ? '' : 'page']]);
  const matching = countWords(count, spec.noun);
  return html`<fieldset class="selection">
    <legend>Selection</legend>
    <p>
      <a href="${selectPage}" class="select-page" data-list="${spec.name}"
        >${query.select === 'page' ? 'Clear the selection' : 'Select this page'}</a
      >
    </p>
    <div class="field">
      <input type="radio" name="scope" value="ids" id="scope-ids-${spec.name}" checked />
      <label for="scope-ids-${spec.name}" class="inline">The rows ticked below</label>
      <input type="radio" name="scope" value="matching" id="scope-matching-${spec.name}" />
      <label for="scope-matching-${spec.name}" class="inline">All ${matching} matching the filters</label>
    </div>
    ${
      rights.actions.length
        ? html`<label for="f-action-${spec.name}" class="inline">Action</label>
            <select id="f-action-${spec.name}" name="action">
              ${rights.actions.map((a) => html`<option value="${a.action}">${a.label}</option>`)}
            </select>
            <button type="submit">Continue…</button>`
        : ''
    }
    ${rights.exports ? html`<button type="submit" formaction="${base}/export" class="secondary">Download as CSV</button>` : ''}
  </fieldset>`;
}

/** A list's body under its filter form: the count, the table (in a selection form when the role may act), pages. */
export function listBody<Row>(
  ctx: ListContext,
  spec: ListSpec<Row>,
  query: Query,
  p: ListParams<Row>,
  found: PageOfRows<Row>,
  count: Count,
): Html {
  const rights = selectionRights(ctx, spec);
  const selectable = found.rows.length > 0 && (rights.actions.length > 0 || rights.exports);
  const base = listBase(ctx, spec);
  const kept = filterAndSort(spec, query, p);
  const countLine = html`<p class="count" role="status">
    ${countWords(count, spec.noun)}${found.rows.length ? `; ${found.rows.length} on this page` : ''}
    ${rights.exports && count.n > 0 ? html` · <a href="${link(`${base}/export.csv`, kept)}" download>Download all as CSV</a>` : ''}
  </p>`;
  const tableHtml = rowsTable(ctx, spec, query, p, found.rows, selectable);
  const withSelection = selectable
    ? html`<form
          method="post"
          action="${spec.bulk ? `${base}/bulk` : `${base}/export`}"
          class="select-rows"
          id="select-${spec.name}"
        >
          ${csrfField(ctx.view.signedIn.csrf)}
          <input type="hidden" name="query" value="${new URLSearchParams(kept).toString()}" />
          ${selectionControls(ctx, spec, query, p, count)} ${tableHtml}
        </form>
        <script src="/console/assets/lists.js" defer></script>`
    : tableHtml;
  return html`${countLine} ${withSelection} ${found.rows.length === 0 ? html`<p>No ${spec.noun.one} matches.</p>` : ''}
    <div class="list-foot">${pager(ctx, spec, query, p, found)} ${sizeForm(ctx, spec, query, p)}</div>`;
}
