import pg from 'pg';
import type { Test } from 'tap';

/** Records the text of every simple query this process sends while the test runs (pg's Client, all pools). */
export function recordSql(t: Test): string[] {
  const sent: string[] = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    if (typeof args[0] === 'string') sent.push(args[0]);
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  t.teardown(() => {
    pg.Client.prototype.query = original;
  });
  return sent;
}
