import pg from 'pg';
import type { Queryable } from './postgres.js';

/** Rows written before the first ANALYZE: past the few rows a prepared statement is first planned over. */
const FIRST_ANALYZE = 1000;

/**
 * Keeps the planner's statistics of tables that one long transaction fills (an import) in step with their size.
 * PostgreSQL chooses a prepared statement's generic plan after its fifth run and keeps it until the statistics of a
 * table it reads change: chosen while the tables held a few hundred rows, a lookup of 500 keys stays a sequential scan
 * however large they grow (an import of a million events spent most of its time in one such scan, 2026-11-28).
 * ANALYZE inside the transaction counts the transaction's own rows and makes the cached plans be chosen again. It
 * runs each time the rows written have doubled since the last, so about ten times for a million rows.
 */
export class GrowingTables {
  private readonly analyze: string;
  private next = FIRST_ANALYZE;

  constructor(tables: readonly string[]) {
    // Identifiers from the code's own table lists, never from input.
    this.analyze = `ANALYZE ${[...new Set(tables)].map((t) => pg.escapeIdentifier(t)).join(', ')}`;
  }

  /** Called with the rows written so far in the transaction; analyzes the tables when that has doubled. */
  async written(sql: Queryable, rows: number): Promise<boolean> {
    if (rows < this.next) return false;
    await sql.query(this.analyze);
    this.next = rows * 2;
    return true;
  }
}
