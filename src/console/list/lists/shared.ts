import type { Filtered, Query } from '../spec.js';
import type { Where } from '../where.js';
import { countryName as labelledCountry } from '../../labels.js';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A country as the console's labels name it ("United States", not US); an empty cell for none, as CSV wants. */
export const countryName = (code: string | null | undefined): string => (code ? labelledCountry(code) : '');

/** A code in words ("on hold", not on_hold). */
export const words = (value: string | null | undefined) => (value ? value.replaceAll('_', ' ') : '');

/** Filters built step by step: each step adds its condition, a refusal is kept by its field. */
export class FilterSteps implements Filtered {
  readonly errors: Record<string, string> = {};
  private readonly steps: ((w: Where) => void)[] = [];

  step(step: (w: Where) => void): void {
    this.steps.push(step);
  }

  /** `column = value` when the query names the filter, the value one of `allowed` (if given). */
  equals(query: Query, name: string, sql: string, allowed?: readonly string[]): void {
    const value = query[name];
    if (!value) return;
    if (allowed && !allowed.includes(value)) this.errors[name] = 'Choose one of the options.';
    else this.step((w) => w.add((n) => `${sql} = ${n}`, value));
  }

  /** A search of at least three characters, as a `LIKE` over a fixed lower-cased expression. */
  search(query: Query, sql: string, what: string): void {
    const q = (query.q ?? '').trim();
    if (!q) return;
    if (q.length < 3) this.errors.q = `Enter at least three characters of ${what}.`;
    else if (q.length > 100) this.errors.q = 'Enter at most 100 characters.';
    else {
      const pattern = `%${q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      this.step((w) => w.add((n) => `${sql} LIKE ${n}`, pattern));
    }
  }

  apply(where: Where): void {
    for (const step of this.steps) step(where);
  }
}
