import type { RecordedEvent } from '../events/types.js';
import type { Writer } from '../storage/postgres.js';
import type { FoldProjection } from './fold.js';

/**
 * A read model kept in PostgreSQL tables, applied event by event. Inline projections run inside the appending
 * transaction, so an answer that follows a write sees it; `tables` are truncated and refilled from the log by a
 * rebuild. Read models of one row per stream are folds instead (fold.ts): written once per change.
 */
export interface EventProjection {
  name: string;
  /** Tables owned by this projection, truncated before a rebuild. */
  tables: string[];
  /** Event types this projection reads; others are never passed to apply. */
  eventTypes: readonly string[];
  /** Runs in the transaction that appended the event; a write whose answer nobody reads may be sent (`sql.send`). */
  apply(sql: Writer, event: RecordedEvent): Promise<void>;
}

export type Projection = EventProjection | FoldProjection<unknown>;

export function isFold(projection: Projection): projection is FoldProjection<unknown> {
  return 'evolve' in projection;
}
