import { createHash } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { DocumentContentType } from '../domain/documents/index.js';
import { detectContentType, SNIFF_BYTES } from './sniff.js';
import type { DocumentStorage } from './storage.js';

export interface ReceivedFile {
  size: number;
  checksum_sha256: string;
  detected_content_type: DocumentContentType | null;
  /** True when the upload went past `maxBytes` and was cut off there (its size is then maxBytes + 1). */
  truncated: boolean;
}

/**
 * Streams an upload into the document's incoming file, counting its bytes, hashing them and reading its first bytes
 * for its content type, in constant memory. Past `maxBytes` it stops writing (the caller refuses the file) but keeps
 * reading the source to its end, so the client gets an answer rather than a reset connection.
 */
export async function receiveFile(
  storage: DocumentStorage,
  id: string,
  source: Readable,
  maxBytes: number,
): Promise<ReceivedFile> {
  const hash = createHash('sha256');
  let size = 0;
  let head = Buffer.alloc(0);
  let truncated = false;
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (truncated) return done();
      if (head.length < SNIFF_BYTES) head = Buffer.concat([head, chunk.subarray(0, SNIFF_BYTES - head.length)]);
      const room = maxBytes + 1 - size;
      const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
      size += kept.length;
      hash.update(kept);
      if (size > maxBytes) truncated = true;
      done(null, kept);
    },
  });
  await pipeline(source, meter, storage.createIncoming(id));
  return { size, checksum_sha256: hash.digest('hex'), detected_content_type: detectContentType(head), truncated };
}
