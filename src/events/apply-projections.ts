import type pg from 'pg';
import { RowFolder, foldWriterOf, rowNamedBy, type FoldedRow, type FoldWriter } from '../projections/fold.js';
import { isFold, type EventProjection, type Projection } from '../projections/projection.js';
import type { Queryable, Writer } from '../storage/postgres.js';
import type { RecordedEvent } from './types.js';

/**
 * Applies a transaction's events (or one stream's, replayed) to every read model: event projections event by event,
 * folds row by row, each row written once with the result of all its events here.
 */
export async function applyProjections(
  sql: Writer,
  projections: readonly Projection[],
  events: readonly RecordedEvent[],
): Promise<void> {
  for (const event of events) {
    for (const projection of projections)
      if (!isFold(projection) && projection.eventTypes.includes(event.type)) await projection.apply(sql, event);
  }
  for (const projection of projections) {
    if (!isFold(projection)) continue;
    const folder = new RowFolder(projection);
    await folder.add(sql, events);
    folder.flush(foldWriterOf(sql));
  }
}

/**
 * Events replayed a batch at a time, their writes (`sql.send`) not yet answered: on a pipelining connection they
 * leave together, and whatever is sent next follows them, so the caller reads or checks the next batch while the
 * server writes this one.
 */
export interface ProjectedBatch<E extends RecordedEvent = RecordedEvent> {
  /** Resolves once every statement of the batch is answered; rejects with the batch's first failure. */
  settled(): Promise<void>;
  /** The event whose statement (or projection) failed first, once `settled` has rejected; else undefined. */
  failedEvent(): E | undefined;
}

/**
 * Events a fold row is held in memory for after its last change, in a replay: a row whose events all fall within
 * this many events of each other is written once (the service's and the seeded workspaces' streams do: a lead's
 * follow-up comes soon after its capture); one changed again later is written again. Bounds the memory a replay
 * holds whatever the log's size.
 */
export const REPLAY_WINDOW = 10_000;

/**
 * A replay of the log (import, rebuild), in global order, batch by batch: event projections are applied as they
 * come; fold rows are held in memory until no event has changed them for REPLAY_WINDOW events, then written, one
 * statement per table for every row due. `finish` writes the rest.
 */
export class Replay<E extends RecordedEvent> {
  private readonly folders: RowFolder<unknown>[];
  private readonly events: readonly EventProjection[];
  private readonly window: number;
  private clock = 0;

  constructor(projections: readonly Projection[], window = REPLAY_WINDOW) {
    this.folders = projections.filter(isFold).map((p) => new RowFolder(p));
    this.events = projections.filter((p): p is EventProjection => !isFold(p));
    this.window = window;
  }

  /** Rows held in memory, not yet written. */
  get held(): number {
    return this.folders.reduce((n, f) => n + f.size, 0);
  }

  /**
   * Applies `events` and returns without waiting for the writes' answers. A read (`sql.query`) still waits, and sees
   * every write sent before it. A failure stops the batch and is reported by `settled`, with the earliest event a
   * failed statement was sent for (`failedEvent`).
   */
  async project(sql: Queryable, events: readonly E[]): Promise<ProjectedBatch<E>> {
    const writer = new BatchWriter<E>(sql);
    const clock = this.clock;
    this.clock += events.length;
    try {
      for (const event of events) {
        writer.blame(event);
        for (const projection of this.events)
          if (projection.eventTypes.includes(event.type)) await projection.apply(writer, event);
      }
      for (const folder of this.folders) await folder.add(writer, events, clock, (e) => writer.blame(e as E));
      for (const folder of this.folders) folder.flush(writer, this.clock - this.window);
    } catch (error) {
      writer.thrown(error);
    }
    return writer.batch();
  }

  /** Writes every row still held. */
  finish(sql: Queryable): ProjectedBatch<E> {
    const writer = new BatchWriter<E>(sql);
    for (const folder of this.folders) folder.flush(writer);
    return writer.batch();
  }
}

/** A transaction's connection that notes, for each statement, the event it is of. */
class BatchWriter<E extends RecordedEvent> implements Writer, FoldWriter {
  private current: E | undefined = undefined;
  /** Statements (and failures of the code between them) counted in the order they were sent. */
  private sent = 0;
  private first: { error: unknown; at: number; event: E | undefined } | undefined = undefined;
  private readonly answers: Promise<void>[] = [];
  private readonly sql: Queryable;

  constructor(sql: Queryable) {
    this.sql = sql;
  }

  /** The event the statements sent from now on are of. */
  blame(event: E): void {
    this.current = event;
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>> {
    const at = this.sent++;
    const event = this.current;
    try {
      return await this.sql.query<R>(text, values);
    } catch (error) {
      this.failed(error, at, event);
      throw error;
    }
  }

  /**
   * Sends a statement without waiting; with `rows` (a fold's), a failure is of the first event of the row its error
   * names, or of the statement's first row.
   */
  send(text: string, values?: unknown[], rows?: readonly FoldedRow<unknown>[]): void {
    const at = this.sent++;
    const event = this.current;
    // Handled at once, so a failure is never unobserved; `settled` reports it.
    this.answers.push(
      this.sql.query(text, values).then(
        () => undefined,
        (error: unknown) => this.failed(error, at, rows ? ((rowNamedBy(error, rows) ?? rows[0])?.first as E) : event),
      ),
    );
  }

  /** A failure of the projections' own code: after every statement sent so far. */
  thrown(error: unknown): void {
    this.failed(error, this.sent++, this.current);
  }

  batch(): ProjectedBatch<E> {
    return { settled: () => this.settled(), failedEvent: () => this.first?.event };
  }

  /** Waits for every statement sent to be answered; throws the batch's first failure. */
  private async settled(): Promise<void> {
    await Promise.all(this.answers);
    if (this.first !== undefined) throw this.first.error;
  }

  /**
   * After a failure the transaction answers every later statement with an error, so the failure of the statement
   * sent first is the one that broke it, whatever order the answers were handled in.
   */
  private failed(error: unknown, at: number, event: E | undefined): void {
    if (this.first === undefined || at < this.first.at) this.first = { error, at, event };
  }
}
