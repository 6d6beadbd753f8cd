/**
 * A copy of a few bytes in memory of their own. A small Buffer made by `Buffer.from` is a slice of a shared pool
 * (64 KiB on Node 24), and a slice kept for long keeps its whole pool alive: bytes kept per stream or per key (a
 * stream's head hash while an import runs, a cached data key) are copied out first.
 */
export function ownBytes(bytes: Buffer): Buffer {
  const own = Buffer.alloc(bytes.length);
  bytes.copy(own);
  return own;
}
