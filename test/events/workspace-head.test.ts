import { createHash } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { HASH_BYTES, workspaceHead, WorkspaceHeadDigest } from '../../src/events/chain.js';
import { canonicalJson } from '../../src/events/canonical-json.js';
import { checkProperty } from '../support/properties.js';

// The workspace head is defined as SHA-256 of the RFC 8785 JSON of [[stream, revision, hash hex], …] sorted by
// stream. workspaceHead and the row-by-row digest the export and the import use must hash exactly that text, however
// many rows (past the digest's chunk of 64 KiB) and whatever the stream names (quotes, escapes, astral characters).

const head = fc.record({
  streamId: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
  revision: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
  hash: fc.uint8Array({ minLength: HASH_BYTES, maxLength: HASH_BYTES }).map((bytes) => Buffer.from(bytes)),
});

function byDefinition(heads: { streamId: string; revision: number; hash: Buffer }[]): string {
  const rows = heads
    .map((h) => [h.streamId, h.revision, h.hash.toString('hex')])
    .sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : 0));
  return createHash('sha256').update(canonicalJson(rows)!, 'utf8').digest('hex');
}

t.test('the workspace head hashes the JSON of its sorted rows, whole or row by row', async (t) => {
  await checkProperty(
    t,
    'workspace head',
    fc.property(fc.uniqueArray(head, { selector: (h) => h.streamId, maxLength: 1200 }), (heads) => {
      const expected = byDefinition(heads);
      if (workspaceHead(heads) !== expected) throw new Error('workspaceHead differs from its definition');
      const digest = new WorkspaceHeadDigest();
      const sorted = [...heads].sort((a, b) => (a.streamId < b.streamId ? -1 : a.streamId > b.streamId ? 1 : 0));
      for (const h of sorted) digest.add(h.streamId, h.revision, h.hash.toString('hex'));
      if (digest.hex() !== expected) throw new Error('the row-by-row digest differs from the definition');
    }),
    60,
  );
  // fast-check draws short arrays; this one passes the digest's chunk several times (about 100 bytes a row).
  const many = Array.from({ length: 3000 }, (_, i) => ({
    streamId: `lead-${String(3000 - i).padStart(8, '0')}-\u00e9\u{1F600}"\\`,
    revision: i,
    hash: createHash('sha256').update(String(i)).digest(),
  }));
  t.equal(workspaceHead(many), byDefinition(many), '3,000 streams, past the chunk of text hashed at a time');
  t.equal(workspaceHead([]), createHash('sha256').update('[]').digest('hex'), 'no stream: the hash of []');
});
