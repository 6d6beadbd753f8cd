import type { EventStore, StoreTransaction } from '../../events/event-store.js';
import type { CommandContext } from '../../events/types.js';
import { leadWriteGate } from '../../intake/sync-gate.js';
import { runCommand } from '../run-command.js';

/**
 * Runs a command that changes a lead (its updated_at): through the lead-sync gate (src/intake/sync-gate.ts), with the
 * transaction's time read from `clock` once the gate is held, never before `context.now`. `work` takes its time from
 * `tx.context.now`. Every command that appends to a lead stream runs through here.
 */
export function runLeadWrite<T>(
  services: { store: EventStore; now: () => Date },
  context: CommandContext,
  streams: string[],
  work: (tx: StoreTransaction) => Promise<T>,
): Promise<T> {
  return runLeadWriteAfterReads(services, context, streams, async () => undefined, work);
}

/**
 * runLeadWrite for a command that reads before it decides: `read` is sent with BEGIN, the gate and the locks (one
 * round trip; the server runs it after them, under the locks), and must not need the transaction's time, which is
 * read only once the gate is answered. `work` then gets what it read.
 */
export function runLeadWriteAfterReads<R, T>(
  services: { store: EventStore; now: () => Date },
  context: CommandContext,
  streams: string[],
  read: (tx: StoreTransaction) => Promise<R>,
  work: (tx: StoreTransaction, reads: R) => Promise<T>,
): Promise<T> {
  const gated = async (tx: StoreTransaction): Promise<T> => {
    const reads = read(tx);
    // Observed now: awaited below once the gate is answered; should the opening fail, they fail with it.
    reads.catch(() => undefined);
    await tx.whenOpened();
    const now = services.now();
    tx.setTime(now.getTime() < context.now.getTime() ? context.now : now);
    return work(tx, await reads);
  };
  return runCommand(services.store, context, streams, gated, {
    opening: leadWriteGate(context.tenantId, context.sandbox),
  });
}
