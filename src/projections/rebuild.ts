import type pg from 'pg';
import type { PersonalDataKeys } from '../events/personal-data.js';
import { Replay, type ProjectedBatch } from '../events/apply-projections.js';
import { readAllWith } from '../events/postgres-event-store.js';
import { START_OF_LOG, type StoredEvent } from '../events/types.js';
import type { Queryable } from '../storage/postgres.js';
import { inTransaction } from '../storage/transaction.js';
import type { Projection } from './projection.js';

/** Events read per round trip; the log is read in global order, batch after batch. */
export const REBUILD_BATCH = 1000;

/** How far a rebuild is: events replayed so far, of the log's `total`. */
export interface RebuildProgress {
  events: number;
  total: number;
}

export interface RebuildOptions {
  batchSize?: number;
  /** Called once the log is counted (`events` 0) and after each batch is replayed. */
  onProgress?: (progress: RebuildProgress) => void;
  /**
   * Prepare each statement once (see TransactionOptions): the replay runs the projections' few statements over and
   * over, and PostgreSQL then parses and plans each once. Only on connections straight to PostgreSQL.
   */
  namedStatements?: boolean;
  /** Events a folded row is held for after its last change (REPLAY_WINDOW); tests make it small. */
  window?: number;
}

/**
 * Drops the rows of every read model and replays the whole log into them, in one transaction. Appends wait
 * meanwhile (the events table is locked in SHARE mode), so the rebuilt rows equal what live projection gives. Rows
 * of folds are written once per window of the log (Replay), one statement per table and window step.
 *
 * The replay is pipelined: the next batch is asked for before this one is projected, and the projections' writes
 * (`sql.send`) are not waited for until the batch after has been projected, so PostgreSQL reads and writes while
 * Node opens and projects. The projections never write the events table, so reading ahead reads what reading after
 * would have; every statement runs in the order it was sent.
 */
export async function rebuildReadModels(
  pool: pg.Pool,
  projections: readonly Projection[],
  /** Opens the personal values the projections read (the service's keys; none: they read sealed, as erased). */
  keys: PersonalDataKeys | undefined,
  options: RebuildOptions = {},
): Promise<{ events: number }> {
  const batchSize = options.batchSize ?? REBUILD_BATCH;
  const onProgress = options.onProgress;
  return inTransaction(
    pool,
    async (sql) => {
      await sql.query('LOCK TABLE events IN SHARE MODE');
      const tables = projections.flatMap((p) => p.tables);
      if (tables.length > 0) await sql.query(`TRUNCATE ${tables.join(', ')}`);
      const total = onProgress ? await countEvents(sql) : 0;
      onProgress?.({ events: 0, total });
      // With the table locked no transaction is appending, so everything this snapshot sees is the whole log.
      const read = (after = START_OF_LOG): Promise<StoredEvent[]> => {
        const next = readAllWith(sql, after, batchSize, false, keys);
        next.catch(() => undefined); // awaited in its turn; a failure while projecting must not go unobserved
        return next;
      };
      const replay = new Replay<StoredEvent>(projections, options.window);
      let next = read();
      let previous: ProjectedBatch | undefined;
      let count = 0;
      for (;;) {
        const batch = await next;
        if (batch.length === 0) break;
        next = read(batch[batch.length - 1]!.position);
        const projected = await replay.project(sql, batch);
        await previous?.settled();
        previous = projected;
        count += batch.length;
        onProgress?.({ events: count, total });
      }
      const last = replay.finish(sql);
      await previous?.settled();
      await last.settled();
      return { events: count };
    },
    { namedStatements: options.namedStatements },
  );
}

async function countEvents(sql: Queryable): Promise<number> {
  return (await sql.query<{ n: number }>('SELECT count(*)::bigint AS n FROM events')).rows[0]!.n;
}
