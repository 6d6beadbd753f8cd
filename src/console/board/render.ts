import type { MemberView } from '../context.js';
import { html, type Html } from '../html.js';
import { choice, csrfField, notice } from '../layout.js';
import { BOARD_FILTER_NAMES, type BoardQuery } from './filter.js';
import type { BoardCard, BoardColumn } from './model.js';

/** The board's filters as one GET form in a row (owner, branch, country, visa type), kept in the URL. */
export function boardFilters(
  view: MemberView,
  action: string,
  label: string,
  query: BoardQuery,
  errors: Record<string, string>,
): Html {
  const s = view.workspace.settings;
  return html`<form method="get" action="${action}" class="filters" role="search" aria-label="${label}">
    <div class="filter-row">
      ${choice({
        name: 'owner',
        label: 'Owner',
        options: [['none', 'No owner'], ...s.users.map((u) => [u.id, u.name] as const)],
        value: query.owner,
        empty: 'Anyone',
        error: errors.owner,
      })}
      ${choice({ name: 'branch', label: 'Branch', options: s.branches.map((b) => [b.id, b.name]), value: query.branch, empty: 'Any branch', error: errors.branch })}
      ${choice({ name: 'country', label: 'Country', options: s.countries.map((c) => [c, c]), value: query.country, empty: 'Any country', error: errors.country })}
      ${choice({ name: 'visa_type', label: 'Visa type', options: s.visa_types.map((v) => [v, v]), value: query.visa_type, empty: 'Any visa type', error: errors.visa_type })}
      <div class="filter-actions">
        <button type="submit">Apply</button>
        <a href="${action}">Clear</a>
      </div>
    </div>
  </form>`;
}

/** The board's filters again as hidden fields of a move form, so the answer comes back to the same board. */
function keptFilters(query: BoardQuery): Html[] {
  return BOARD_FILTER_NAMES.filter((n) => query[n]).map(
    (n) => html`<input type="hidden" name="${n}" value="${query[n]}" />`,
  );
}

/** A card's move form: a select of the stages it may go to and a Move button (the script only submits it). */
function moveForm(view: MemberView, card: BoardCard, moveAction: string, query: BoardQuery): Html | '' {
  if (card.targets.length === 0) return '';
  const id = `move-${card.id}`;
  return html`<form method="post" action="${moveAction}" class="move">
    ${csrfField(view.signedIn.csrf)}
    <input type="hidden" name="id" value="${card.id}" /> ${keptFilters(query)}
    <label for="${id}">Move<span class="visually-hidden"> ${card.title}</span> to</label>
    <select id="${id}" name="stage">
      ${card.targets.map(([key, name]) => html`<option value="${key}">${name}</option>`)}
    </select>
    <button type="submit">Move<span class="visually-hidden"> ${card.title}</span></button>
  </form>`;
}

function cardOf(view: MemberView, card: BoardCard, moveAction: string, query: BoardQuery): Html {
  const movable = card.targets.length > 0;
  const titleId = `card-${card.id}`;
  const errorId = `card-${card.id}-error`;
  return html`<li>
    <article
      class="card${card.refusal ? ' refused' : ''}"
      data-id="${card.id}"
      data-stage="${card.stageKey}"
      aria-labelledby="${titleId}"
      ${movable ? html`tabindex="0" draggable="true" aria-describedby="board-help${card.refusal ? ` ${errorId}` : ''}"` : ''}
    >
      <h3 id="${titleId}"><a href="${card.href}">${card.title}</a></h3>
      <dl>
        ${card.facts.map(
          ([label, value]) =>
            html`<dt>${label}</dt>
              <dd>${value}</dd>`,
        )}
      </dl>
      ${card.refusal ? html`<p class="error" id="${errorId}">Not moved: ${card.refusal}</p>` : ''}
      ${moveForm(view, card, moveAction, query)}
    </article>
  </li>`;
}

function columnOf(view: MemberView, column: BoardColumn, moveAction: string, query: BoardQuery, noun: string): Html {
  const headingId = `column-${column.key}`;
  const rest = column.count - column.cards.length;
  // Past the exact bound the planner's estimate is shown, and said to be one.
  const count = `${column.exact ? '' : 'about '}${column.count.toLocaleString('en')}`;
  return html`<section class="board-column" data-stage="${column.key}" aria-labelledby="${headingId}">
    <h2 id="${headingId}">
      ${column.name}
      <span class="column-count">${count}<span class="visually-hidden"> ${noun}</span></span>
    </h2>
    <ol class="cards">
      ${column.cards.map((card) => cardOf(view, card, moveAction, query))}
    </ol>
    ${column.count === 0 ? html`<p class="empty">None.</p>` : ''}
    ${
      rest > 0
        ? html`<p class="more">
            <a href="${column.listHref}">All ${count} in the list</a>
            (${column.exact ? '' : 'about '}${rest.toLocaleString('en')} more)
          </p>`
        : ''
    }
  </section>`;
}

/**
 * The board: one column per stage with its count and its first cards, each card with its move form when the member
 * may move it; the script (board.js) adds dragging and moving by keyboard to those forms, and says what happened.
 */
export function boardOf(
  view: MemberView,
  o: {
    columns: readonly BoardColumn[];
    moveAction: string;
    query: BoardQuery;
    noun: string;
    order: string;
    message?: string;
    alert?: string;
    movable: boolean;
  },
): Html {
  return html`<div id="board-answer">${notice(o.message)} ${o.alert ? notice(o.alert, 'alert') : ''}</div>
    <p class="hint" id="board-help">
      Each column shows its first cards, ${o.order}.
      ${
        o.movable
          ? `To move a card, choose its new stage and press Move; or drag it to a column; or focus it, press Space to
          pick it up, the left and right arrows to choose a column, Enter to drop it there and Escape to cancel.`
          : ''
      }
    </p>
    <div class="board" id="board" ${o.movable ? html`data-movable="true"` : ''}>
      ${o.columns.map((column) => columnOf(view, column, o.moveAction, o.query, o.noun))}
    </div>
    <p id="board-live" class="visually-hidden" aria-live="assertive"></p>
    ${o.movable ? html`<script src="/console/assets/board.js" defer></script>` : ''}`;
}

export const BOARD_CSS = `
/* Boards: a column per stage side by side, scrolled sideways in their own box; a card per record */
.board { display: flex; gap: 0.75rem; overflow-x: auto; align-items: flex-start; padding-bottom: 0.5rem; position: relative; } /* holds its hidden labels */
.board-column { flex: 1 0 14rem; max-width: 22rem; background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 0.5rem; }
.board-column.drop-target { outline: 3px dashed var(--link); outline-offset: 2px; }
.board-column h2 { font-size: 1rem; margin: 0 0 0.5rem; display: flex; justify-content: space-between; gap: 0.5rem; }
.column-count { font-weight: normal; color: var(--muted); }
ol.cards { list-style: none; margin: 0; padding: 0; display: grid; gap: 0.5rem; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 4px; padding: 0.5rem; }
.card[draggable="true"] { cursor: grab; }
.card.refused { border: 2px solid var(--bad); }
.card.lifted { outline: 3px solid #b35c00; box-shadow: 0 2px 8px rgb(0 0 0 / 25%); }
.card h3 { font-size: 0.95rem; margin: 0 0 0.25rem; overflow-wrap: anywhere; }
.card dl { display: grid; grid-template-columns: max-content 1fr; gap: 0 0.5rem; margin: 0 0 0.25rem; font-size: 0.85rem; }
.card dt { color: var(--muted); }
.card dd { margin: 0; overflow-wrap: anywhere; }
.card form.move { display: flex; flex-wrap: wrap; gap: 0.25rem; align-items: center; font-size: 0.85rem; }
.card form.move label { font-weight: normal; }
.card form.move select { flex: 1 1 8rem; min-width: 0; }
.board-column .more, .board-column .empty { font-size: 0.85rem; margin: 0.5rem 0 0; }
@media (max-width: 40rem) { .board-column { flex-basis: 85vw; } }
`;
