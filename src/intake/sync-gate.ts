import type { Queryable, Statement } from '../storage/postgres.js';

/**
 * The lead-sync gate of a workspace and mode: a transaction-scoped advisory lock. Every lead write holds it shared
 * from its first statement to its end and reads its time only once it holds it; a listing takes it exclusive for
 * one statement before it reads its rows, so every lead write begun before the listing has ended by then, and every
 * later one carries a later time. Why that is enough: docs/architecture.md, "Sync never misses a change".
 */
const GATE_KEY = "hashtextextended('lead-sync:' || $1 || ':' || $2, 0)";

/** The statement a lead write runs first in its transaction (before its stream locks): the gate, shared. */
export function leadWriteGate(tenantId: string, sandbox: boolean): Statement {
  return { text: `SELECT pg_advisory_xact_lock_shared(${GATE_KEY})`, values: [tenantId, sandbox ? 't' : 'l'] };
}

/**
 * Waits until no lead write of the workspace and mode is in flight: the gate, exclusive, taken and released by one
 * statement outside any transaction. Writes that ask for the gate meanwhile wait for this statement only.
 */
export async function waitForLeadWrites(sql: Queryable, tenantId: string, sandbox: boolean): Promise<void> {
  await sql.query(`SELECT pg_advisory_xact_lock(${GATE_KEY})`, [tenantId, sandbox ? 't' : 'l']);
}
