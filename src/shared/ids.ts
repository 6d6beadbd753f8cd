import { randomUUID } from 'node:crypto';

/**
 * A new id for a row that is inserted once and indexed (events, leads, applications): an RFC 9562 UUIDv7, whose
 * leading 48 bits are the time in milliseconds. New ids land at the right edge of their btree indexes instead of on
 * a random page of a large index each, so an insert touches pages already in memory and writes far fewer full-page
 * images to the WAL after a checkpoint.
 *
 * Built from Node's `randomUUID()` (a version 4 UUID: 122 random bits, from a cached pool of random bytes) with
 * its first 48 bits replaced by the time and its version nibble set to 7; the variant bits are already RFC 9562's.
 * Not the `uuid` package's v7, which draws 16 fresh bytes from Web Crypto for every id.
 * Ids of one millisecond are not ordered among themselves, which index locality does not need.
 */
export function newId(now: number = Date.now()): string {
  const time = now.toString(16).padStart(12, '0');
  // randomUUID(): xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx; from index 15 on: the 12 random bits of rand_a, the variant and rand_b.
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${randomUUID().slice(15)}`;
}
