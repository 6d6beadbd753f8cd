import type pg from 'pg';
import type { Projection } from '../projections/projection.js';
import { mayWrite, PipelinedTransaction, TransactionRolledBack, type TransactionChannel } from '../storage/pipeline.js';
import { pgErrorCode } from '../storage/postgres.js';
import type { StoreTransaction, TransactOptions } from './event-store.js';
import { applyProjections } from './apply-projections.js';
import type { PersonalDataKeys } from './personal-data.js';
import { openingStatements, PostgresStoreTransaction } from './store-transaction.js';
import type { CommandContext } from './types.js';

/**
 * Thrown to a command sharing a database transaction when that transaction cannot go on: a statement failed, or a
 * command needs something only a transaction of its own gives. Every command of it then runs again alone.
 */
export class SharedTransactionAbandoned extends Error {
  constructor(reason: string, options?: ErrorOptions) {
    super(`The shared transaction was abandoned: ${reason}`, options);
    this.name = 'SharedTransactionAbandoned';
  }
}

/**
 * One command's part of a transaction shared with others (its members). Statements go to the shared pipelined
 * connection as the member gives them; the pipeline keeps them in order and gathers what all members give in one
 * turn of the event loop into one write, so N members cost the round trips, BEGIN, COMMIT and WAL flush of one.
 * Any failure of a statement aborts the whole transaction: the member then hears SharedTransactionAbandoned, and
 * the coordinator runs every member again alone, where its own errors and retries apply.
 */
export class MemberChannel implements TransactionChannel {
  private sentWrite = false;

  constructor(private readonly shared: PipelinedTransaction) {}

  get opened(): boolean {
    return this.shared.opened;
  }

  /** True once any member sent a statement that may write (this transaction then has its id). */
  get wrote(): boolean {
    return this.shared.wrote;
  }

  /** True once this member sent a statement that may write: its failure then spoils the others' transaction. */
  get memberWrote(): boolean {
    return this.sentWrite;
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
  ): Promise<pg.QueryResult<R>> {
    if (mayWrite(text)) this.sentWrite = true;
    try {
      return await this.shared.query<R>(text, values);
    } catch (error) {
      throw new SharedTransactionAbandoned('a statement failed', { cause: error });
    }
  }

  send(text: string, values: unknown[] = []): void {
    this.sentWrite = true;
    this.shared.send(text, values);
  }
}

/** A command waiting to run in a shared transaction. */
export interface Waiting<T = unknown> {
  context: CommandContext;
  streams: string[];
  /** What decides which commands may share a transaction: no two that take the same lock. */
  locks: string[];
  work: (tx: StoreTransaction) => Promise<T>;
  options: TransactOptions;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export interface SharedRunDeps {
  pool: pg.Pool;
  projections: readonly Projection[];
  /** Whether events carry their chained hash (see PostgresEventStoreOptions.chained). */
  chained: boolean;
  /** The data keys personal values are sealed with (see PostgresEventStoreOptions.personal). */
  keys: PersonalDataKeys | undefined;
  /** Runs one command in a transaction of its own. */
  alone(item: Waiting): Promise<unknown>;
  /** Tells the subscribers in this process that events were committed. */
  announce(): void;
}

/**
 * Runs waiting commands in one database transaction and settles each. Should the transaction fail as a whole (a
 * statement failed, COMMIT was refused, or a command that had written failed), it is rolled back and every command
 * runs again alone, where its own errors and retries apply.
 */
export async function runShared(items: Waiting[], deps: SharedRunDeps): Promise<void> {
  const alone = (item: Waiting) => deps.alone(item).then(item.resolve, item.reject);
  if (items.length === 1) return alone(items[0]!);
  const outcomes = await tryShared(items, deps).catch(() => undefined);
  if (!outcomes) {
    await Promise.all(items.map(alone));
    return;
  }
  outcomes.forEach((outcome, i) => (outcome.ok ? items[i]!.resolve(outcome.value) : items[i]!.reject(outcome.error)));
}

/** True for an error the server raised in a statement (severity ERROR): the transaction was rolled back whole. */
function refusedByServer(error: unknown): boolean {
  return (
    pgErrorCode(error) !== undefined &&
    typeof error === 'object' &&
    error !== null &&
    'severity' in error &&
    error.severity === 'ERROR'
  );
}

/** The commands' outcomes once their shared transaction committed, or undefined when it was abandoned (rolled back). */
async function tryShared(items: Waiting[], deps: SharedRunDeps): Promise<Outcome[] | undefined> {
  const client = await deps.pool.connect();
  let unfit: Error | undefined;
  // One opening runs: the one of the lowest rank (a lead write's registration with the earliest time).
  const first = items
    .filter((i) => i.options.opening)
    .sort((a, b) => (a.options.openingRank ?? 0) - (b.options.openingRank ?? 0))[0]?.options.opening;
  const shared = new PipelinedTransaction(
    client,
    openingStatements(first, [...new Set(items.flatMap((i) => i.streams))]),
  );
  try {
    const members = items.map((item) => {
      const channel = new MemberChannel(shared);
      return {
        channel,
        tx: new PostgresStoreTransaction(channel, item.context, item.streams, true, deps.chained, deps.keys),
      };
    });
    const outcomes = await Promise.all(
      items.map(async (item, i): Promise<Outcome> => {
        try {
          return { ok: true, value: await item.work(members[i]!.tx) };
        } catch (error) {
          return { ok: false, error };
        }
      }),
    );
    const spoiled = outcomes.some(
      (o, i) => !o.ok && (o.error instanceof SharedTransactionAbandoned || members[i]!.channel.memberWrote),
    );
    if (spoiled || !outcomes.some((o) => o.ok)) {
      // Abandoned: everyone runs again alone. Or every command failed on its own rule before writing anything:
      // nothing to keep, and nothing to run again.
      unfit = await shared.rollback();
      return spoiled ? undefined : outcomes;
    }
    let appended = 0;
    for (const [i, { tx }] of members.entries()) {
      if (!outcomes[i]!.ok) continue;
      if (tx.appended.length > 0) await applyProjections(tx.writes, deps.projections, tx.appended);
      tx.writes.flush();
      appended += tx.appended.length;
    }
    try {
      await shared.commit();
    } catch (error) {
      unfit = await shared.rollback();
      // Refused by the server, or lost before COMMIT was sent: nothing was committed, so everyone runs again alone.
      // Lost after COMMIT was sent: it may have committed, and running again could write everything twice, so each
      // command gets the error, as a transaction of its own would.
      if (refusedByServer(error) || shared.lostBeforeCommit || error instanceof TransactionRolledBack) return undefined;
      return outcomes.map(() => ({ ok: false, error }));
    }
    if (appended > 0) deps.announce();
    return outcomes;
  } catch (error) {
    unfit ??= await shared.rollback();
    throw error;
  } finally {
    client.release(unfit);
  }
}
