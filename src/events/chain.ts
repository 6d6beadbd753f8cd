import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';
import type { EventMetadata } from './types.js';

/**
 * The hash chain of a stream (see docs/architecture.md, "Tamper evidence"). Each event's hash is
 *
 *   hash = SHA-256( previous hash (32 bytes; 32 zero bytes for revision 0)
 *                   || revision as a 4-byte big-endian signed integer
 *                   || SHA-256( RFC 8785 canonical JSON of the event's content ) )
 *
 * where the content is { id, stream, type, tenant, sandbox, data, metadata, time } (time: ISO 8601 UTC with
 * milliseconds, as `Date.prototype.toISOString` writes it; ids in lower case). The revision is bound in the link
 * rather than in the content because an append with `expected: 'any'` learns its revision only in the database:
 * the content digest is computed here, the link wherever the previous hash is known (here for a new stream, in the
 * INSERT for an existing one, with the same formula in SQL: `sha256(prev || int4send(revision) || digest)`).
 */
export const HASH_BYTES = 32;
export const GENESIS: Buffer = Buffer.alloc(HASH_BYTES);

/** What an event's content digest covers: everything it says except its revision and place in the global log. */
export interface ChainedContent {
  id: string;
  streamId: string;
  type: string;
  tenantId: string;
  sandbox: boolean;
  data: Record<string, unknown>;
  metadata: EventMetadata;
  createdAt: Date;
}

/** The exact bytes the content digest is taken over: RFC 8785 (JSON Canonicalization Scheme), UTF-8. */
export function canonicalContent(event: ChainedContent): string {
  const text = canonicalJson({
    id: event.id.toLowerCase(),
    stream: event.streamId,
    type: event.type,
    tenant: event.tenantId.toLowerCase(),
    sandbox: event.sandbox,
    data: event.data,
    metadata: event.metadata,
    time: event.createdAt.toISOString(),
  });
  if (text === undefined) throw new Error('An event cannot be canonicalised');
  return text;
}

export function contentDigest(event: ChainedContent): Buffer {
  return createHash('sha256').update(canonicalContent(event), 'utf8').digest();
}

/** One link: the event's hash from the previous event's hash, its revision and its content digest. */
export function link(previous: Buffer, revision: number, digest: Buffer): Buffer {
  const revisionBytes = Buffer.alloc(4);
  revisionBytes.writeInt32BE(revision);
  return createHash('sha256').update(previous).update(revisionBytes).update(digest).digest();
}

/** The hashes of events appended to a stream after `previous` (GENESIS for a new stream), from `firstRevision` on. */
export function chainFrom(previous: Buffer, firstRevision: number, digests: readonly Buffer[]): Buffer[] {
  const hashes: Buffer[] = [];
  let last = previous;
  digests.forEach((digest, i) => {
    last = link(last, firstRevision + i, digest);
    hashes.push(last);
  });
  return hashes;
}

export interface StreamHead {
  streamId: string;
  revision: number;
  hash: Buffer;
}

/**
 * A workspace's head: one hash over the heads of all its streams (SHA-256 of the RFC 8785 JSON of
 * [[stream, revision, hash hex], …] sorted by stream). An auditor who kept it, with the log position it was taken
 * at, can later show that nothing at or before that position was changed, removed or added.
 */
export function workspaceHead(heads: Iterable<StreamHead>): string {
  const digest = new WorkspaceHeadDigest();
  const sorted = [...heads].sort((a, b) => (a.streamId < b.streamId ? -1 : a.streamId > b.streamId ? 1 : 0));
  for (const h of sorted) digest.add(h.streamId, h.revision, h.hash.toString('hex'));
  return digest.hex();
}

/** Text handed to the hash at a time while a workspace head is hashed. */
const DIGEST_CHUNK = 64 * 1024;

/**
 * workspaceHead's hash taken row by row, for heads too many to hold as rows at once (an export's trailer, an
 * import's checker): the rows must come in workspaceHead's order, streams sorted as strings. The JSON of an array is
 * its items' JSON between brackets, joined by commas, so the text hashed is the same.
 */
export class WorkspaceHeadDigest {
  private readonly hash = createHash('sha256').update('[');
  private text = '';
  private rows = 0;

  add(streamId: string, revision: number, hashHex: string): void {
    this.text += (this.rows++ > 0 ? ',' : '') + canonicalJson([streamId, revision, hashHex])!;
    if (this.text.length >= DIGEST_CHUNK) {
      this.hash.update(this.text, 'utf8');
      this.text = '';
    }
  }

  hex(): string {
    return this.hash.update(`${this.text}]`, 'utf8').digest('hex');
  }
}
