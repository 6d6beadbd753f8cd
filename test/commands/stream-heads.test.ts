import fc from 'fast-check';
import t from 'tap';
import { StreamHeadTable } from '../../src/commands/export/stream-heads.js';
import { STREAM_KINDS, streamName } from '../../src/domain/streams.js';
import { workspaceHead, type StreamHead } from '../../src/events/chain.js';
import { checkProperty } from '../support/properties.js';

// The import's compact head store against the plain one it replaced (a Map of StreamHead objects hashed with
// workspaceHead): the same heads, the same workspace head, whatever the streams and the order they are recorded in.

const hex = (bytes: number) =>
  fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => Buffer.from(b).toString('hex'));
const uuid = fc.tuple(hex(4), hex(2), hex(2), hex(2), hex(6)).map(([a, b, c, d, e]) => `${a}-${b}-${c}-${d}-${e}`);
// Few distinct uuids and kinds, so streams share kinds and uuids and are recorded more than once.
const stream = fc
  .tuple(
    fc.constantFrom(...STREAM_KINDS),
    fc.integer({ min: 0, max: 7 }),
    fc.array(uuid, { minLength: 8, maxLength: 8 }),
  )
  .map(([kind, i, ids]) => streamName(kind, ids[i]!));
const write = fc.record({
  stream: fc.oneof(
    stream,
    fc.constantFrom(...STREAM_KINDS).chain((kind) => uuid.map((id) => streamName(kind, id))),
  ),
  revision: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
  hash: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b)),
});

t.test('the compact head store gives the heads and workspace head of the plain one', async (t) => {
  await checkProperty(
    t,
    'stream heads',
    fc.property(fc.array(write, { maxLength: 3000 }), (writes) => {
      const plain = new Map<string, StreamHead>();
      const table = new StreamHeadTable();
      for (const { stream, revision, hash } of writes) {
        plain.set(stream, { streamId: stream, revision, hash: Buffer.from(hash) });
        table.set(stream, revision, hash);
        // The caller's buffer is not kept: changing it changes nothing recorded.
        hash.fill(0);
      }
      if (table.size !== plain.size) return false;
      for (const [name, head] of plain) {
        const got = table.get(name);
        if (got === undefined || got.revision !== head.revision || !got.hash.equals(head.hash)) return false;
      }
      return table.workspaceHead() === workspaceHead(plain.values());
    }),
    100,
  );
});

t.test('a stream never recorded, or a name of another form, has no head', async (t) => {
  const table = new StreamHeadTable();
  const id = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
  table.set(`lead-${id}`, 0, Buffer.alloc(32, 1));
  t.ok(table.has(`lead-${id}`));
  t.notOk(table.has(`task-${id}`));
  t.notOk(table.has(`lead-${id.toUpperCase()}`));
  t.notOk(table.has('lead-1'));
  t.equal(table.get('stream-x'), undefined);
  t.throws(() => table.set('stream-x', 0, Buffer.alloc(32)));
  t.equal(new StreamHeadTable().workspaceHead(), workspaceHead([]));
});

t.test('the store grows past many slabs and slot tables', async (t) => {
  const plain = new Map<string, StreamHead>();
  const table = new StreamHeadTable();
  for (let i = 0; i < 20_000; i++) {
    const id = `${i.toString(16).padStart(8, '0')}-0000-7000-8000-000000000000`;
    const name = streamName(STREAM_KINDS[i % STREAM_KINDS.length]!, id);
    const hash = Buffer.alloc(32, i % 251);
    plain.set(name, { streamId: name, revision: i, hash });
    table.set(name, i, hash);
  }
  t.equal(table.size, 20_000);
  t.equal(table.workspaceHead(), workspaceHead(plain.values()));
});
