import t from 'tap';
import { ownBytes } from '../../src/shared/own-bytes.js';

t.test('a copy in memory of its own, not a slice of the shared pool', async (t) => {
  const pooled = Buffer.from('00ff'.repeat(16), 'hex');
  t.ok(pooled.buffer.byteLength > pooled.length, 'a small Buffer.from is a slice of a larger pool');
  const own = ownBytes(pooled);
  t.same(own, pooled);
  t.equal(own.buffer.byteLength, 32, 'the copy holds only its 32 bytes');
  pooled[0] = 1;
  t.equal(own[0], 0, 'and shares nothing with the original');
});
