import type pg from 'pg';
import type { Projection } from '../projections/projection.js';
import type { Queryable, Writer } from '../storage/postgres.js';
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

/**
 * A batch of events applied as applyProjections applies them, its writes (`sql.send`) not yet answered: on a
 * pipelining connection they leave together, and whatever is sent next follows them, so the caller reads or checks
 * the next batch while the server writes this one.
 */
export interface ProjectedBatch<E extends RecordedEvent = RecordedEvent> {
  /** Resolves once every statement of the batch is answered; rejects with the batch's first failure. */
  settled(): Promise<void>;
  /** The event whose statement (or projection) failed first, once `settled` has rejected; else undefined. */
  failedEvent(): E | undefined;
}

/**
 * Applies `events` in order (replays: import, rebuild) and returns without waiting for the writes' answers. A
 * projection's read (`sql.query`) still waits, and sees every write sent before it. A failure stops the batch and is
 * reported by `settled`, with the event whose statement failed first (`failedEvent`).
 */
export async function projectBatch<E extends RecordedEvent>(
  sql: Queryable,
  projections: readonly Projection[],
  events: readonly E[],
): Promise<ProjectedBatch<E>> {
  const writer = new BatchWriter(sql);
  try {
    for (const [index, event] of events.entries()) {
      writer.event = index;
      await applyProjections(writer, projections, [event]);
    }
  } catch (error) {
    writer.failed(writer.event, error);
  }
  return {
    settled: () => writer.settled(),
    failedEvent: () => (writer.failedAt === undefined ? undefined : events[writer.failedAt]),
  };
}

/** A transaction's connection that notes, for each statement, the event it was sent for. */
class BatchWriter implements Writer {
  event = 0;
  failedAt: number | undefined = undefined;
  private failure: { error: unknown } | undefined = undefined;
  private readonly answers: Promise<void>[] = [];
  private readonly sql: Queryable;

  constructor(sql: Queryable) {
    this.sql = sql;
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>> {
    const event = this.event;
    try {
      return await this.sql.query<R>(text, values);
    } catch (error) {
      this.failed(event, error);
      throw error;
    }
  }

  send(text: string, values?: unknown[]): void {
    const event = this.event;
    // Handled at once, so a failure is never unobserved; `settled` reports it.
    this.answers.push(
      this.sql.query(text, values).then(
        () => undefined,
        (error: unknown) => this.failed(event, error),
      ),
    );
  }

  /** Waits for every statement sent to be answered; throws the batch's first failure. */
  async settled(): Promise<void> {
    await Promise.all(this.answers);
    if (this.failure !== undefined) throw this.failure.error;
  }

  /**
   * After a failure the transaction answers every later statement with that first failure, so the earliest event
   * whose statement failed is the one that broke it, whatever order the answers were handled in.
   */
  failed(event: number, error: unknown): void {
    if (this.failedAt === undefined || event < this.failedAt) this.failedAt = event;
    this.failure ??= { error };
  }
}
