import type { RecordedEvent } from '../events/types.js';

/*
 * Each aggregate lists its event types once, derived from its event union: the table names every type of the union
 * (as key and value), so a type added to the union and not to the table, or a table entry the union lacks, is a
 * compile error naming it. The read models filter on these lists; a type missing from one would be silently skipped.
 */

/** Every type of an event union, keyed by itself. */
export type EveryType<E extends { type: string }> = { readonly [K in E['type']]: K };

/** The types of an event union, in the table's order. */
export function eventTypes<E extends { type: string }>(table: EveryType<E>): readonly E['type'][] {
  return Object.values<E['type']>(table);
}

/**
 * Reads events of one aggregate from the log: the type is checked against the aggregate's list; the data is what
 * the aggregate's decide wrote for that type (the log is appended only by it), so it is taken as that event's data.
 */
export function eventReader<E extends { type: string; data: object }>(
  types: readonly E['type'][],
  aggregate: string,
): (event: Pick<RecordedEvent, 'type' | 'data'>) => E {
  const known: ReadonlySet<string> = new Set(types);
  return (event) => {
    if (!known.has(event.type)) throw new Error(`${event.type} is not ${aggregate} event`);
    return { type: event.type, data: event.data } as E;
  };
}
