import type { RecordedEvent } from '../events/types.js';
import type { Queryable, Writer } from '../storage/postgres.js';

/*
 * Read models as folds: a row's events are folded in memory (the domain's own evolve) and the row is written once
 * with the result, however many events changed it. A command appending several events to a stream writes its row
 * once; a rebuild or an import folds a window of the log and writes each row once per window, one statement per
 * table for all of them (docs/architecture.md, "Read models are folds, written once per change").
 */

/** A row being folded, not yet written. */
export interface FoldedRow<S> {
  id: string;
  tenantId: string;
  sandbox: boolean;
  state: S;
  /** The revision of the last event folded in. */
  revision: number;
  /** True when the row's first event here created it: it is inserted. Else it is updated (a missing row stays so). */
  isNew: boolean;
  /** The times of the first and the last event folded in since the row was read or created. */
  firstAt: Date;
  lastAt: Date;
  /**
   * The first event folded in since the row was read, without its data (held only to name it: an import refuses its
   * line if the row's write fails).
   */
  first: RecordedEvent;
}

/** A row as stored, read before an event that needs the row as it was. */
export interface StoredRow {
  tenantId: string;
  id: string;
}

export interface FoldProjection<S> {
  name: string;
  /** Tables owned by this read model, truncated before a rebuild. */
  tables: string[];
  /** Event types this read model folds; others are never passed to it. */
  eventTypes: readonly string[];
  /** The id of the row the event changes, or undefined for an event of these types that is not this model's. */
  rowOf(event: RecordedEvent): string | undefined;
  /** True for the event that starts a row (the row is inserted). */
  creates(event: RecordedEvent): boolean;
  /** True for an event that says the whole row: the row as stored need not be read before it. */
  replaces(event: RecordedEvent): boolean;
  /** The stored states of these rows, by id (a row that is not there, or is another workspace's, is absent). */
  load(sql: Queryable, rows: readonly StoredRow[]): Promise<Map<string, S>>;
  /** The row after the event; undefined when the event changes no row (its row is not there). */
  evolve(state: S | undefined, event: RecordedEvent): S | undefined;
  /**
   * Sends the rows' writes: one statement per table (new rows inserted, the others updated), each statement's values
   * as arrays of parameters (never SQL text from values).
   */
  write(sql: FoldWriter, rows: readonly FoldedRow<S>[]): void;
}

/** Where folded rows are written: `send` takes the rows the statement writes, to name the event a failure is of. */
export interface FoldWriter {
  send(text: string, values: unknown[], rows: readonly FoldedRow<unknown>[]): void;
}

/** A Writer whose statements for folded rows need no blame (live appends: a failure fails the command). */
export function foldWriterOf(sql: Writer): FoldWriter {
  return { send: (text, values) => sql.send(text, values) };
}

/** The row a unique violation names by its `id` (PostgreSQL's detail: `Key (id)=(…) already exists.`), if one. */
export function rowNamedBy<R extends { id: string }>(error: unknown, rows: readonly R[]): R | undefined {
  const detail = typeof error === 'object' && error !== null && 'detail' in error ? String(error.detail) : '';
  const id = /^Key \((?:task_)?id\)=\(([^)]*)\)/.exec(detail)?.[1];
  return id === undefined ? undefined : rows.find((r) => r.id.toLowerCase() === id.toLowerCase());
}

/** Folds events into rows kept in memory until `flush` writes them. */
export class RowFolder<S> {
  /** With each row, the replay's clock when it last changed. */
  private readonly rows = new Map<string, FoldedRow<S> & { clock: number }>();
  readonly projection: FoldProjection<S>;

  constructor(projection: FoldProjection<S>) {
    this.projection = projection;
  }

  get size(): number {
    return this.rows.size;
  }

  /**
   * Folds `events` (in log order) into the rows; rows not held yet whose first event here needs the row as it was are
   * read first, in one statement. `clock` is the replay's count of events before these (for `flush`); `folding` is
   * told of each event before it is folded (a failure is of that event).
   */
  async add(
    sql: Queryable,
    events: readonly RecordedEvent[],
    clock = 0,
    folding?: (event: RecordedEvent) => void,
  ): Promise<void> {
    const p = this.projection;
    const mine: { event: RecordedEvent; id: string }[] = [];
    const toRead = new Map<string, StoredRow>();
    const seen = new Set<string>();
    for (const event of events) {
      if (!p.eventTypes.includes(event.type)) continue;
      const id = p.rowOf(event);
      if (id === undefined) continue;
      mine.push({ event, id });
      if (seen.has(id)) continue;
      seen.add(id);
      if (!this.rows.has(id) && !p.creates(event) && !p.replaces(event))
        toRead.set(id, { tenantId: event.tenantId, id });
    }
    const stored = toRead.size > 0 ? await p.load(sql, [...toRead.values()]) : new Map<string, S>();
    for (const { event, id } of mine) {
      folding?.(event);
      const row = this.rows.get(id);
      const state = p.evolve(row ? row.state : stored.get(id), event);
      if (state === undefined) continue;
      if (row) {
        row.state = state;
        row.revision = event.revision;
        row.lastAt = event.createdAt;
        row.clock = clock;
        continue;
      }
      this.rows.set(id, {
        id,
        tenantId: event.tenantId,
        sandbox: event.sandbox,
        state,
        revision: event.revision,
        isNew: p.creates(event),
        firstAt: event.createdAt,
        lastAt: event.createdAt,
        first: { ...event, data: {} },
        clock,
      });
    }
  }

  /** Writes the rows last changed before `clock` (all when undefined), in the order first seen, and forgets them. */
  flush(sql: FoldWriter, clock?: number): void {
    const due: FoldedRow<S>[] = [];
    for (const row of this.rows.values()) if (clock === undefined || row.clock < clock) due.push(row);
    if (due.length === 0) return;
    for (const row of due) this.rows.delete(row.id);
    this.projection.write(sql, due);
  }
}

/** The rows to insert and the rows to update. */
export function newAndStored<R extends { isNew: boolean }>(rows: readonly R[]): { inserts: R[]; updates: R[] } {
  return { inserts: rows.filter((r) => r.isNew), updates: rows.filter((r) => !r.isNew) };
}

/**
 * The stored states of rows of `table` (its `column`, a json or jsonb column), by id. Table and column are this
 * code's own names, never values.
 */
export async function loadStates<S>(
  sql: Queryable,
  table: 'applications' | 'tasks' | 'invoices' | 'documents',
  column: 'state' | 'body',
  rows: readonly StoredRow[],
): Promise<Map<string, S>> {
  const result = await sql.query<{ id: string; state: S }>(
    `SELECT t.id, t.${column} AS state FROM unnest($1::uuid[], $2::uuid[]) AS k(id, tenant_id)
       JOIN ${table} t ON t.id = k.id AND t.tenant_id = k.tenant_id`,
    [rows.map((r) => r.id), rows.map((r) => r.tenantId)],
  );
  return new Map(result.rows.map((r) => [r.id, r.state]));
}

/** An event of a row that is not there, in a read model whose every event but the first needs its row. */
export function noRow(event: RecordedEvent): Error {
  return new Error(`No read-model row for ${event.streamId}`);
}
