import type pg from 'pg';
import type { PersonalDataKeys } from '../events/personal-data.js';
import { applyProjections, readAllWith } from '../events/postgres-event-store.js';
import { START_OF_LOG, type GlobalPosition } from '../events/types.js';
import { withTransaction } from '../storage/postgres.js';
import type { Projection } from './projection.js';

/** Events read per round trip; the log is read in global order, batch after batch. */
export const REBUILD_BATCH = 1000;

/**
 * Drops the rows of every read model and replays the whole log into them, in one transaction. Appends wait
 * meanwhile (the events table is locked in SHARE mode), so the rebuilt rows equal what live projection gives.
 */
export async function rebuildReadModels(
  pool: pg.Pool,
  projections: readonly Projection[],
  /** Opens the personal values the projections read (the service's keys; none: they read sealed, as erased). */
  keys: PersonalDataKeys | undefined,
  options: { batchSize?: number } = {},
): Promise<{ events: number }> {
  const batchSize = options.batchSize ?? REBUILD_BATCH;
  return withTransaction(pool, async (sql) => {
    await sql.query('LOCK TABLE events IN SHARE MODE');
    const tables = projections.flatMap((p) => p.tables);
    if (tables.length > 0) await sql.query(`TRUNCATE ${tables.join(', ')}`);
    let after: GlobalPosition = START_OF_LOG;
    let count = 0;
    for (;;) {
      // With the table locked no transaction is appending, so everything this snapshot sees is the whole log.
      const batch = await readAllWith(sql, after, batchSize, false, keys);
      if (batch.length === 0) break;
      await applyProjections(sql, projections, batch);
      count += batch.length;
      after = batch[batch.length - 1]!.position;
    }
    return { events: count };
  });
}
