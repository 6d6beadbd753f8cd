import type { GlobalPosition } from '../events/types.js';
import { compactId, openCursor, sealCursor } from '../shared/sealed-cursor.js';
import type { SecretBox } from '../shared/secret-box.js';

/**
 * The Events API's opaque `next_cursor`: the last event's place in the log with the workspace, mode and order it
 * belongs to, sealed under the list-cursor key as the leads list's cursor is, so a changed byte, another workspace's
 * cursor or one of the other order is refused instead of reading elsewhere.
 */
export function encodeEventCursor(
  box: SecretBox,
  where: { tenantId: string; sandbox: boolean; order: 'asc' | 'desc' },
  position: GlobalPosition,
): string {
  const plain = [
    'e',
    compactId(where.tenantId),
    where.sandbox ? '1' : '0',
    where.order,
    position.txId,
    position.position,
  ].join('.');
  return sealCursor(box, plain);
}

/** The position a cursor names, or undefined when it is not one this service issued for this workspace, mode and order. */
export function decodeEventCursor(
  box: SecretBox,
  where: { tenantId: string; sandbox: boolean; order: 'asc' | 'desc' },
  cursor: string,
): GlobalPosition | undefined {
  const plain = openCursor(box, cursor);
  if (plain === undefined) return undefined;
  const [kind, tenant, mode, order, txId, position] = plain.split('.');
  if (kind !== 'e' || tenant !== compactId(where.tenantId) || mode !== (where.sandbox ? '1' : '0')) return undefined;
  if (order !== where.order || !txId || !/^\d{1,20}$/.test(txId) || !position || !/^\d{1,19}$/.test(position))
    return undefined;
  return { txId, position: Number(position) };
}
