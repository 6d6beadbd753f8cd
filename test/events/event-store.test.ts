import t from 'tap';
import { freshDatabase } from '../support/db.js';
import { concurrentAppendsWithFollowingReader, optimisticConcurrency } from '../support/event-store-scenarios.js';

t.test('optimistic concurrency, stream reads and event fields', async (t) => {
  const { pool } = await freshDatabase(t);
  await optimisticConcurrency(t, pool);
});

t.test('concurrent appends and a gap-free following reader', async (t) => {
  const { pool } = await freshDatabase(t, undefined, 30);
  await concurrentAppendsWithFollowingReader(t, pool);
});
