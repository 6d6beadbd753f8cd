import { applicationStream, fold, type ApplicationState } from '../../domain/applications/index.js';
import type { StoreTransaction } from '../../events/event-store.js';
import { toApplicationEvent } from '../../projections/applications.js';
import { NotFoundError } from '../errors.js';

/** Reads and folds a case's stream inside the transaction; 404 when it is unknown, another tenant's or the other mode's. */
export async function loadApplication(
  tx: StoreTransaction,
  id: string,
): Promise<{ state: ApplicationState; revision: number }> {
  const events = await tx.readStream(applicationStream(id));
  const first = events[0];
  if (!first || first.tenantId !== tx.context.tenantId || first.sandbox !== tx.context.sandbox)
    throw new NotFoundError('application');
  return { state: fold(events.map(toApplicationEvent))!, revision: events[events.length - 1]!.revision };
}
