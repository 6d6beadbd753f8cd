import t from 'tap';
import { createPool } from '../../src/storage/postgres.js';
import { freshDatabase } from '../support/db.js';

// A pool keeps the connections it opened (createPool: min = max). Closing them after an idle time made every
// statement of the process stall while the connections a burst had opened closed together (docs/decisions.md).

async function burst(pool: import('pg').Pool, size: number): Promise<Set<number>> {
  const rows = await Promise.all(
    Array.from({ length: size }, () =>
      pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.2)').then((r) => r.rows[0]!.pid),
    ),
  );
  return new Set(rows);
}

t.test('the connections a burst opened are still open, the same ones, after any idle timeout', async (t) => {
  const { url } = await freshDatabase(t, undefined, 2);
  const pool = createPool(url, 4);
  t.teardown(() => pool.end());
  const first = await burst(pool, 4);
  t.equal(first.size, 4, 'a burst of four opened four connections');
  // pg-pool closes idle connections above `min` after idleTimeoutMillis (10 s unless set): wait past the pool's own.
  const idleTimeout = pool.options.idleTimeoutMillis ?? 0;
  t.ok(idleTimeout > 0, `the pool closes idle connections above min after ${idleTimeout} ms`);
  await new Promise((resolve) => setTimeout(resolve, idleTimeout + 1_000));
  t.equal(pool.totalCount, 4, 'none was closed while idle');
  const second = await burst(pool, 4);
  t.same([...second].sort(), [...first].sort(), 'the next burst ran on the same server processes');
});
