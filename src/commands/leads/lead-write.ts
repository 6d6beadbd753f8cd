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
  const gated = (tx: StoreTransaction): Promise<T> => {
    const now = services.now();
    tx.setTime(now.getTime() < context.now.getTime() ? context.now : now);
    return work(tx);
  };
  return runCommand(services.store, context, streams, gated, {
    opening: leadWriteGate(context.tenantId, context.sandbox),
  });
}
