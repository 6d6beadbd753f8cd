import { randomUUID } from 'node:crypto';
import type { StoreTransaction } from '../events/event-store.js';
import type { Queryable, Statement } from '../storage/postgres.js';
import type { SqlRunner } from '../storage/write-batch.js';

/** A registered write older than this is taken to be left over from a crashed process and no longer holds readers back. */
export const INTENT_EXPIRY_MS = 2 * 60 * 1000;

/** How long an intent takes in new writes of its workspace and mode before the next write registers a fresh one. */
export const INTENT_SHARING_MS = 50;

/**
 * Lead writes in flight, registered before their time is read: GET /v1/leads shows only rows older than the oldest
 * registered intent, so a write that commits late cannot carry an updated_at below what a client already saw.
 *
 * An intent is a row of `lead_write_intents` holding a time `at`. Every write it covers reads its own time after the
 * row was committed and never takes a time before `at`. Writes of one process, workspace and mode that start within
 * INTENT_SHARING_MS of each other share one intent, so under load most writes register nothing. The first writes
 * commit the row on its own in the round trip that begins their transaction (the event store's `before`; a repeat
 * does nothing); later writes join the committed row. The last write out removes the row: inside its own
 * transaction when it knows it is the last, so the row disappears exactly when the write appears, else right after.
 */
interface SharedIntent {
  id: string;
  tenantId: string;
  sandbox: boolean;
  at: Date;
  /** performance.now() when it was created, for INTENT_SHARING_MS. */
  startedAt: number;
  /** Writes covered and not finished. */
  members: number;
  /** Known to be committed (a covered write's first round trip came back). */
  committed: boolean;
  /** Takes no new writes (too old, or its removal is under way). */
  closed: boolean;
  /** A covered write's transaction removes it. */
  removing: boolean;
}

/** What a covered write needs: the time it must not go below, and the registration to send while it is not known to be committed. */
export interface WriteIntent {
  readonly at: Date;
  /** For TransactOptions.before; undefined when the row is already committed. */
  readonly registration: Statement | undefined;
  /** @internal */
  readonly shared: SharedIntent;
  /** Set when this write's transaction removes the row. */
  removedInTransaction: boolean;
}

function registration(intent: SharedIntent): Statement {
  return {
    text: 'INSERT INTO lead_write_intents (id, tenant_id, sandbox, at) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING',
    values: [intent.id, intent.tenantId, intent.sandbox, intent.at],
  };
}

const REMOVE = 'DELETE FROM lead_write_intents WHERE id = $1';

/** The intents of one database (one pool), per workspace and mode. */
class IntentRegistry {
  private readonly open = new Map<string, SharedIntent>();

  constructor(private readonly pool: Queryable) {}

  join(tenantId: string, sandbox: boolean, clock: () => Date): WriteIntent {
    const key = `${tenantId}:${sandbox}`;
    let shared = this.open.get(key);
    if (shared && (shared.closed || performance.now() - shared.startedAt > INTENT_SHARING_MS)) {
      shared.closed = true;
      this.open.delete(key);
      shared = undefined;
    }
    if (!shared) {
      shared = { id: randomUUID(), tenantId, sandbox, at: clock(), startedAt: performance.now(), members: 0, committed: false, closed: false, removing: false };
      this.open.set(key, shared);
    }
    shared.members += 1;
    return { at: shared.at, registration: shared.committed ? undefined : registration(shared), shared, removedInTransaction: false };
  }

  /** Called by the last covered write before it commits: its transaction removes the row. */
  removeWith(sql: SqlRunner, intent: WriteIntent): Promise<unknown> {
    const shared = intent.shared;
    // A retried transaction of the same write adds the removal again.
    if (shared.members !== 1 || (shared.removing && !intent.removedInTransaction)) return Promise.resolve();
    shared.closed = true;
    shared.removing = true;
    if (this.open.get(`${shared.tenantId}:${shared.sandbox}`) === shared) this.open.delete(`${shared.tenantId}:${shared.sandbox}`);
    intent.removedInTransaction = true;
    return sql.query(REMOVE, [shared.id]);
  }

  /** After a covered write ends: the last one out removes the row unless its transaction did. */
  async leave(intent: WriteIntent, succeeded: boolean): Promise<void> {
    const shared = intent.shared;
    shared.members -= 1;
    if (intent.removedInTransaction && !succeeded) shared.removing = false;
    if (shared.members > 0 || (shared.removing && succeeded)) return;
    // Nobody covered is left: the row goes now (and a write that starts meanwhile registers a fresh one).
    shared.closed = true;
    if (this.open.get(`${shared.tenantId}:${shared.sandbox}`) === shared) this.open.delete(`${shared.tenantId}:${shared.sandbox}`);
    shared.removing = true;
    await this.pool.query(REMOVE, [shared.id]);
  }
}

const registries = new WeakMap<Queryable, IntentRegistry>();

function registryFor(pool: Queryable): IntentRegistry {
  let registry = registries.get(pool);
  if (!registry) {
    registry = new IntentRegistry(pool);
    registries.set(pool, registry);
  }
  return registry;
}

/**
 * The write's time, read once its intent is visible to readers, and set as the transaction's time. When the write
 * carries the registration, that is after its first query came back, which also tells later writes the row is
 * committed. Returns the time.
 */
export function settleTime(tx: StoreTransaction, intent: WriteIntent, clock: () => Date): Date {
  if (intent.registration) {
    if (!tx.opened) throw new Error('A write reads its time only after its first query has registered its intent');
    intent.shared.committed = true;
  }
  const now = clock();
  const settled = now.getTime() < intent.at.getTime() ? intent.at : now;
  tx.setTime(settled);
  return settled;
}

/**
 * Call before the write commits (with `tx.writes`): when no other covered write is in flight, the intent is removed
 * by this transaction, so it disappears exactly when the write appears; otherwise the last write out removes it.
 */
export async function clearWriteIntent(sql: SqlRunner, intent: WriteIntent, pool: Queryable): Promise<void> {
  await registryFor(pool).removeWith(sql, intent);
}

/**
 * Runs a lead write covered by an intent. The write passes `intent.registration` as its transaction's `before`, takes
 * its time from `settleTime` and calls `clearWriteIntent` before it commits. The answer returns after the intent is
 * gone if this write was the last covered one, so a list that follows shows the write.
 */
export async function withWriteIntent<T>(pool: Queryable, tenantId: string, sandbox: boolean, clock: () => Date, write: (intent: WriteIntent) => Promise<T>): Promise<T> {
  const registry = registryFor(pool);
  const intent = registry.join(tenantId, sandbox, clock);
  let result: T;
  try {
    result = await write(intent);
  } catch (error) {
    await registry.leave(intent, false).catch(() => undefined);
    throw error;
  }
  await registry.leave(intent, true);
  return result;
}
