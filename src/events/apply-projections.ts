import type { Projection } from '../projections/projection.js';
import type { Writer } from '../storage/postgres.js';
import type { RecordedEvent } from './types.js';

/** Applies each event to every projection that reads its type, in order. */
export async function applyProjections(
  sql: Writer,
  projections: readonly Projection[],
  events: readonly RecordedEvent[],
): Promise<void> {
  for (const event of events) {
    for (const projection of projections) {
      if (projection.eventTypes.includes(event.type)) await projection.apply(sql, event);
    }
  }
}
