import t from 'tap';
import { TransactionCoalescer } from '../../src/events/transaction-coalescer.js';

interface Item {
  name: string;
  locks: string[];
}

/** A coalescer whose batches finish only when the test says so. */
function harness(maxActive: number, maxItems: number) {
  const batches: { items: string[]; finish(): void }[] = [];
  const coalescer = new TransactionCoalescer<Item>(
    (items) =>
      new Promise<void>((resolve) => {
        batches.push({ items: items.map((i) => i.name), finish: resolve });
      }),
    { maxActive, maxItems },
  );
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { coalescer, batches, settle };
}

t.test('a command alone starts at once; later ones wait for a free slot and then go together', async (t) => {
  const { coalescer, batches, settle } = harness(1, 10);
  coalescer.submit('g', { name: 'a', locks: [] });
  t.same(
    batches.map((b) => b.items),
    [['a']],
    'nothing waits when the group is idle',
  );
  for (const name of ['b', 'c', 'd']) coalescer.submit('g', { name, locks: [] });
  t.equal(batches.length, 1, 'the others wait while the slot is taken');
  batches[0]!.finish();
  await settle();
  t.same(batches[1]!.items, ['b', 'c', 'd'], 'and then go as one batch, in arrival order');
});

t.test('up to maxActive batches per group run at once; other groups are independent', async (t) => {
  const { coalescer, batches } = harness(2, 10);
  coalescer.submit('g', { name: 'a', locks: [] });
  coalescer.submit('g', { name: 'b', locks: [] });
  coalescer.submit('g', { name: 'c', locks: [] });
  coalescer.submit('h', { name: 'x', locks: [] });
  t.same(
    batches.map((b) => b.items),
    [['a'], ['b'], ['x']],
  );
});

t.test('items sharing a lock never go in one batch, and a batch holds at most maxItems', async (t) => {
  const { coalescer, batches, settle } = harness(1, 3);
  coalescer.submit('g', { name: 'first', locks: [] });
  coalescer.submit('g', { name: 'a', locks: ['p1', 'e1'] });
  coalescer.submit('g', { name: 'b', locks: ['p2', 'e1'] });
  coalescer.submit('g', { name: 'c', locks: ['p3'] });
  coalescer.submit('g', { name: 'd', locks: ['p4'] });
  coalescer.submit('g', { name: 'e', locks: ['p5'] });
  batches[0]!.finish();
  await settle();
  t.same(batches[1]!.items, ['a', 'c', 'd'], 'b shares e1 with a and waits; the batch stops at three');
  batches[1]!.finish();
  await settle();
  t.same(batches[2]!.items, ['b', 'e'], 'the ones left behind keep their order');
});
