import { validationFailed } from './errors.js';

/**
 * A query's window `[from, to)` of date-times (already valid and canonical, so comparable as text) must hold
 * something: `to` after `from`. An empty or reversed window is a mistake to name (400), not a page of nothing.
 * JSON Schema cannot compare two values, so this is the one rule the query's schema only states in its description.
 */
export function refuseEmptyWindow<Q extends Record<string, unknown>>(
  query: Q,
  from: keyof Q & string,
  to: keyof Q & string,
): void {
  const start = query[from];
  const end = query[to];
  if (typeof start !== 'string' || typeof end !== 'string') return;
  if (Date.parse(end) <= Date.parse(start))
    throw validationFailed({ [to]: `must be after ${from} (${start}); this window holds nothing` });
}
