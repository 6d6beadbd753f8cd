import { START_OF_LOG, type GlobalPosition } from '../../events/types.js';

/** `<txId>/<position>`: the text of a place in the global log, as `audit verify` prints it after a head. */
export function positionToken(position: GlobalPosition): string {
  return `${position.txId}/${position.position}`;
}

/** The place a token names; null for text that is not one (the schemas check the pattern at the edges). */
export function parsePositionToken(token: string): GlobalPosition | null {
  const match = /^(\d{1,20})\/(\d{1,19})$/.exec(token);
  if (!match) return null;
  const txId = BigInt(match[1]!);
  const position = Number(match[2]!);
  if (txId >= 2n ** 64n || !Number.isSafeInteger(position)) return null;
  return { txId: txId.toString(), position };
}

export function tokenOrStart(token: string | null | undefined): GlobalPosition {
  return token ? (parsePositionToken(token) ?? START_OF_LOG) : START_OF_LOG;
}

/** Whether `a` comes after `b` in the global order (transaction id first, then position). */
export function isAfter(a: GlobalPosition, b: GlobalPosition): boolean {
  const ta = BigInt(a.txId);
  const tb = BigInt(b.txId);
  return ta > tb || (ta === tb && a.position > b.position);
}
