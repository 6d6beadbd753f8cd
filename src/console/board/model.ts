import type { Html } from '../html.js';

/** A card on a board: what a counsellor reads at a glance, and where it may move (none for a viewer). */
export interface BoardCard {
  id: string;
  title: string;
  href: string;
  /** The stage it is in now (its column). */
  stageKey: string;
  /** Label and value pairs, in order (owner, follow-up, age in stage, …). */
  facts: readonly (readonly [string, Html | string])[];
  /** Stages the card may be moved to, by key and name; empty when the member may not move it. */
  targets: readonly (readonly [string, string])[];
  /** Why the last move of this card was refused, shown on the card. */
  refusal?: string;
}

export interface BoardColumn {
  key: string;
  name: string;
  /** Every row of the stage under the filters, not only the cards shown. */
  count: number;
  /** False when the count is the planner's estimate of a stage past the exact bound (shown as "about N"). */
  exact: boolean;
  cards: BoardCard[];
  /** The list filtered to this stage (and the board's filters), for the rest of its rows. */
  listHref: string;
}

/** How many cards a column shows (the first by the list's order); the rest are a link to the list away. */
export const CARDS_PER_COLUMN = 20;
