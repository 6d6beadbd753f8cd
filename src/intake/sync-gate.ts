import type { Queryable, Statement } from '../storage/postgres.js';

/**
 * The lead-sync gate of a workspace and mode: transaction-scoped advisory locks on the two keys (the gate's hash, the
 * writer's backend pid). Every lead write holds its own, exclusive, from its first statement to its end and reads its
 * time only once it holds it; a listing, in one statement before it reads its rows, finds in pg_locks the writes that
 * hold the gate and waits for each of them to end (its own lock on each, shared). So every lead write begun before the
 * listing has ended by then, and every later one carries a later time, while later writes never queue behind a
 * listing that waits. Why that is enough: docs/architecture.md, "Sync never misses a change".
 */
const gateKey = (tenant: string, mode: string) => `hashtext('lead-sync:' || ${tenant} || ':' || ${mode})`;

/** The statement a lead write runs first in its transaction (before its stream locks): its own lock on the gate. */
export function leadWriteGate(tenantId: string, sandbox: boolean): Statement {
  return {
    text: `SELECT pg_advisory_xact_lock(${gateKey('$1', '$2')}, pg_backend_pid())`,
    values: [tenantId, sandbox ? 't' : 'l'],
  };
}

/**
 * Waits until every lead write of the workspace and mode that held the gate when this statement began has ended: one
 * statement outside any transaction, its locks released when it ends. pg_locks is read once, at the statement's
 * start (pg_lock_status copies the lock table on its first call); a write that takes the gate later is not waited for.
 * A write that began on a backend whose earlier write this statement has already waited for waits, at most, until
 * this statement ends.
 */
export async function waitForLeadWrites(sql: Queryable, tenantId: string, sandbox: boolean): Promise<void> {
  // The values reach the plan through sub-selects: folded into a constant key, they made PostgreSQL 17 plan this
  // prepared statement again at every page (its custom plans looked cheaper than the generic one).
  await sql.query(
    `SELECT count(pg_advisory_xact_lock_shared(g.key, l.objid::int)) AS waited
       FROM (SELECT ${gateKey('(SELECT $1::text)', '(SELECT $2::text)')} AS key) g
       JOIN pg_locks l ON l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted AND l.mode = 'ExclusiveLock'
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND l.classid = (g.key::bigint & 4294967295)::oid`,
    [tenantId, sandbox ? 't' : 'l'],
  );
}
