import type { StoreTransaction } from '../events/event-store.js';
import type { Statement } from '../storage/postgres.js';

/** A registered write older than this is taken to be stuck (a hung process) and no longer holds readers back. */
export const INTENT_EXPIRY_MS = 2 * 60 * 1000;

/**
 * Lead writes in flight, registered before their time is read: GET /v1/leads shows only rows older than the oldest
 * registered write of the workspace and mode, so a write that commits late cannot carry an updated_at below what a
 * client already saw.
 *
 * A write registers by naming its database session for the length of its transaction: `set_config('application_name',
 * $1, true)` with `vcrm-w:<tenant>:<l|t>:<ms>`, where `<ms>` is the time it will not go below. PostgreSQL publishes a session's
 * application_name in `pg_stat_activity` the moment it is set, to every role, with no commit and no row written, and
 * puts the old name back when the transaction commits or aborts (after a commit is visible). Readers take the oldest
 * such time of their workspace and mode (`inFlightFloorMsSql`). A write reads its own time only after the round trip
 * that set the name came back.
 */
export interface WriteIntent {
  /** The time the write will not go below. */
  readonly at: Date;
  /** Runs first in the write's transaction (the event store's `opening`), in its first round trip. */
  readonly registration: Statement;
}

const PREFIX = 'vcrm-w';

/** The part of a registered session name before the time: every reader of a workspace and mode matches on it. */
export function intentPrefix(tenantId: string, sandbox: boolean): string {
  return `${PREFIX}:${tenantId}:${sandbox ? 't' : 'l'}:`;
}

/** A lead write's registration; the time comes from the clock the write will read its own time from. */
export function writeIntent(tenantId: string, sandbox: boolean, clock: () => Date): WriteIntent {
  const at = clock();
  // 6 + 36 + 4 + 13 characters: within PostgreSQL's 63-byte limit for names, so nothing is cut off.
  const name = `${intentPrefix(tenantId, sandbox)}${at.getTime()}`;
  return { at, registration: { text: "SELECT set_config('application_name', $1, true)", values: [name] } };
}

/**
 * SQL for the oldest time (epoch milliseconds) registered by a write in flight in this database for a workspace and
 * mode, or NULL. `prefix` and `expiredBefore` are the query's parameter references (`$1`) for `intentPrefix(…)` and for
 * the epoch milliseconds before which a registration is ignored.
 * Reads the server's session table directly (`pg_stat_get_activity`), which is cheap to plan, unlike the view.
 */
export function inFlightFloorMsSql(prefix: string, expiredBefore: string): string {
  // The CASE keeps a session name that merely starts like ours from ever reaching the cast.
  return `(SELECT min(s.ms)
             FROM pg_stat_get_activity(NULL) AS a
            CROSS JOIN LATERAL (
              SELECT CASE WHEN starts_with(a.application_name, ${prefix}) AND substr(a.application_name, length(${prefix}) + 1) ~ '^[0-9]{1,15}$'
                          THEN substr(a.application_name, length(${prefix}) + 1)::bigint END AS ms
            ) AS s
            WHERE a.datid = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database()) AND s.ms > ${expiredBefore})`;
}

/**
 * The write's time, read once its registration is visible to readers (after its first round trip), and set as the
 * transaction's time. Never before `intent.at`. Returns the time.
 */
export function settleTime(tx: StoreTransaction, intent: WriteIntent, clock: () => Date): Date {
  if (!tx.opened) throw new Error('A write reads its time only after its first query has registered its intent');
  const now = clock();
  const settled = now.getTime() < intent.at.getTime() ? intent.at : now;
  tx.setTime(settled);
  return settled;
}
