import type { SecretBox } from '../shared/secret-box.js';
import { compactId, openCursor, sealCursor } from '../shared/sealed-cursor.js';

export interface ListPosition {
  updatedAt: Date;
  id: string;
}

const expandId = (hex: string) =>
  `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;

/**
 * The opaque `next_cursor`: the last row's (updated_at, id) with the workspace and mode it belongs to, sealed with
 * AES-GCM under the list-cursor key (not the key of stored secrets), so a changed byte or another workspace's cursor
 * is refused instead of silently reading elsewhere.
 * About 160 characters, within the spec's 200.
 */
export function encodeCursor(box: SecretBox, tenantId: string, sandbox: boolean, position: ListPosition): string {
  const plain = [
    compactId(tenantId),
    sandbox ? '1' : '0',
    position.updatedAt.getTime().toString(36),
    compactId(position.id),
  ].join('.');
  return sealCursor(box, plain);
}

/** The position a cursor names, or undefined when it is not a cursor this service issued for this workspace and mode. */
export function decodeCursor(
  box: SecretBox,
  tenantId: string,
  sandbox: boolean,
  cursor: string,
): ListPosition | undefined {
  const plain = openCursor(box, cursor);
  if (plain === undefined) return undefined;
  const [tenant, mode, time, id] = plain.split('.');
  if (tenant !== compactId(tenantId) || mode !== (sandbox ? '1' : '0') || !time || !id || !/^[0-9a-f]{32}$/.test(id))
    return undefined;
  const ms = parseInt(time, 36);
  if (!Number.isFinite(ms)) return undefined;
  return { updatedAt: new Date(ms), id: expandId(id) };
}
