import { v7 } from 'uuid';

/**
 * A new id for a row that is inserted once and indexed (events, leads, applications): a UUIDv7, whose leading
 * 48 bits are the time in milliseconds. New ids land at the right edge of their btree indexes instead of on a random
 * page of a large index each, so an insert touches pages already in memory and writes far fewer full-page images to
 * the WAL after a checkpoint. It is an ordinary RFC 9562 UUID to everyone who reads it.
 */
export function newId(): string {
  return v7();
}
