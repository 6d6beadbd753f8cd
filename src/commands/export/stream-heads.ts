import { randomInt } from 'node:crypto';
import { HASH_BYTES, WorkspaceHeadDigest } from '../../events/chain.js';
import { STREAM_KINDS, streamName, type StreamKind } from '../../domain/streams.js';
import { parseStream } from './event-references.js';

/*
 * Every stream's head (revision and hash) while an import runs, in fixed-width bytes rather than an object, a Map
 * entry and a Buffer per stream (about 400 bytes on the V8 heap, and V8 lets its heap grow with what stays live):
 * 53 bytes an entry in slabs, and a 4-byte slot index at most half full, all outside the V8 heap. The checker
 * refuses every stream name but `<kind>-<lower-case uuid>` before it records a head, so that is all a key holds: the
 * kind's rank and the uuid's 16 bytes.
 *
 * The rank orders the kinds as `<kind>-` sorts, and no `<kind>-` begins another, so keys compared as bytes sort as
 * the stream names compare as strings (lower-case hex digits sort as their values): the workspace head is hashed
 * in that order, row by row, without building every row at once (src/events/chain.ts, workspaceHead).
 */

const KINDS_IN_ORDER = [...STREAM_KINDS].sort((a, b) => (`${a}-` < `${b}-` ? -1 : 1));
for (const a of KINDS_IN_ORDER)
  for (const b of KINDS_IN_ORDER)
    if (a !== b && `${b}-`.startsWith(`${a}-`)) throw new Error(`Stream kinds ${a} and ${b} share a prefix`);
const RANK = new Map<StreamKind, number>(KINDS_IN_ORDER.map((kind, i) => [kind, i + 1]));

const KEY_BYTES = 17;
const REVISION_AT = KEY_BYTES;
const HASH_AT = REVISION_AT + 4;
const ENTRY_BYTES = HASH_AT + HASH_BYTES;
/** Entries per slab: a slab is allocated once and never moved (about 212 KiB). */
const SLAB_ENTRIES = 4096;
const FIRST_SLOTS = 1024;

export interface HeadOf {
  revision: number;
  hash: Buffer;
}

/** Stream heads keyed by `<kind>-<lower-case uuid>` stream names. */
export class StreamHeadTable {
  private slabs: Buffer[] = [];
  /** Entry index + 1 per slot, 0 for an empty slot; linear probing, never more than half full. */
  private slots = new Int32Array(FIRST_SLOTS);
  private count = 0;
  /** The key being looked up, written here to avoid an allocation per event. */
  private readonly key = Buffer.alloc(KEY_BYTES);
  /** Seeds the slot hash, so a crafted file cannot pick uuids that all fall in one run of slots. */
  private readonly seed = randomInt(2 ** 31);
  /** The last stream looked up and its entry: the checker looks a stream up, then records its new head. */
  private lastStream = '';
  private lastEntry = -1;
  /** The workspace head, until the next head is recorded: the trailer and the import's result both ask for it. */
  private head: string | undefined = undefined;

  get size(): number {
    return this.count;
  }

  /** The head of a stream, or undefined when none was recorded (or the name is not of the form above). */
  get(stream: string): HeadOf | undefined {
    const entry = this.find(stream);
    if (entry < 0) return undefined;
    const slab = this.slabOf(entry);
    const at = offsetOf(entry);
    // Copied: the slab is rewritten by the stream's next event.
    return {
      revision: slab.readInt32BE(at + REVISION_AT),
      hash: Buffer.from(slab.subarray(at + HASH_AT, at + ENTRY_BYTES)),
    };
  }

  has(stream: string): boolean {
    return this.find(stream) >= 0;
  }

  /** Records a stream's head; the name must be `<kind>-<lower-case uuid>` (checked before, by eventNaming). */
  set(stream: string, revision: number, hash: Buffer): void {
    if (hash.length !== HASH_BYTES) throw new Error('A stream head hash is 32 bytes');
    let entry = this.find(stream);
    if (entry === -2) throw new Error(`Not a stream name an import records: ${stream}`);
    if (entry < 0) this.lastEntry = entry = this.add();
    const slab = this.slabOf(entry);
    const at = offsetOf(entry);
    this.key.copy(slab, at);
    this.head = undefined;
    slab.writeInt32BE(revision, at + REVISION_AT);
    hash.copy(slab, at + HASH_AT);
  }

  /** The workspace head over every stream recorded: the same text as workspaceHead over the same heads. */
  workspaceHead(): string {
    this.head ??= this.hashHeads();
    return this.head;
  }

  private hashHeads(): string {
    const digest = new WorkspaceHeadDigest();
    for (const entry of this.sorted()) {
      const slab = this.slabOf(entry);
      const at = offsetOf(entry);
      digest.add(
        nameAt(slab, at),
        slab.readInt32BE(at + REVISION_AT),
        slab.toString('hex', at + HASH_AT, at + ENTRY_BYTES),
      );
    }
    return digest.hex();
  }

  /**
   * The entries in the order of their keys. Compared by their first eight bytes as two numbers first (a call into
   * Buffer.compare for every comparison took most of the time), then by the whole key when those are equal.
   */
  private sorted(): Int32Array {
    const high = new Uint32Array(this.count);
    const low = new Uint32Array(this.count);
    for (let entry = 0; entry < this.count; entry++) {
      const slab = this.slabOf(entry);
      const at = offsetOf(entry);
      high[entry] = slab.readUInt32BE(at);
      low[entry] = slab.readUInt32BE(at + 4);
    }
    const order = Int32Array.from({ length: this.count }, (_, i) => i);
    return order.sort((a, b) => high[a]! - high[b]! || low[a]! - low[b]! || this.compare(a, b));
  }

  /** The entry of a stream: its index, -1 when absent, -2 when the name is not one this table keys (this.key set). */
  private find(stream: string): number {
    if (stream === this.lastStream && this.lastEntry >= 0) return this.lastEntry;
    const found = this.probe(stream);
    this.lastStream = stream;
    this.lastEntry = found;
    return found;
  }

  private probe(stream: string): number {
    const parsed = parseStream(stream);
    if (parsed === null) return -2;
    this.key[0] = RANK.get(parsed.family)!;
    this.key.write(parsed.id.replaceAll('-', ''), 1, 'hex');
    const mask = this.slots.length - 1;
    for (let slot = this.slotOf(this.key, 0) & mask; ; slot = (slot + 1) & mask) {
      const held = this.slots[slot]!;
      if (held === 0) return -1;
      const at = offsetOf(held - 1);
      if (this.key.compare(this.slabOf(held - 1), at, at + KEY_BYTES) === 0) return held - 1;
    }
  }

  /** A new entry for the key in this.key, its slot taken (the table doubled first when half full). */
  private add(): number {
    if ((this.count + 1) * 2 > this.slots.length) this.grow();
    const entry = this.count++;
    if (entry % SLAB_ENTRIES === 0) this.slabs.push(Buffer.alloc(SLAB_ENTRIES * ENTRY_BYTES));
    this.place(entry, this.key, 0);
    return entry;
  }

  private grow(): void {
    this.slots = new Int32Array(this.slots.length * 2);
    for (let entry = 0; entry < this.count; entry++) {
      this.place(entry, this.slabOf(entry), offsetOf(entry));
    }
  }

  private place(entry: number, keyBytes: Buffer, at: number): void {
    const mask = this.slots.length - 1;
    let slot = this.slotOf(keyBytes, at) & mask;
    while (this.slots[slot] !== 0) slot = (slot + 1) & mask;
    this.slots[slot] = entry + 1;
  }

  /** A 32-bit mix (MurmurHash3's finaliser) of the key's rank and uuid, seeded. */
  private slotOf(bytes: Buffer, at: number): number {
    let h = this.seed ^ bytes[at]!;
    for (let i = 1; i < KEY_BYTES; i += 4) {
      h = Math.imul(h ^ bytes.readInt32LE(at + i), 0x9e3779b1);
      h ^= h >>> 15;
    }
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    return (h ^ (h >>> 16)) >>> 0;
  }

  private slabOf(entry: number): Buffer {
    return this.slabs[Math.floor(entry / SLAB_ENTRIES)]!;
  }

  /** Entry a's key against entry b's, as bytes: the order of their stream names. */
  private compare(a: number, b: number): number {
    const atA = offsetOf(a);
    const atB = offsetOf(b);
    return this.slabOf(a).compare(this.slabOf(b), atB, atB + KEY_BYTES, atA, atA + KEY_BYTES);
  }
}

function offsetOf(entry: number): number {
  return (entry % SLAB_ENTRIES) * ENTRY_BYTES;
}

/** The stream name a key spells. */
function nameAt(slab: Buffer, at: number): string {
  const hex = slab.toString('hex', at + 1, at + KEY_BYTES);
  const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return streamName(KINDS_IN_ORDER[slab[at]! - 1]!, id);
}
