import pg from 'pg';
import type { Test } from 'tap';
import type { Statement } from '../../src/storage/postgres.js';
import { RoundTrip } from '../../src/storage/round-trip.js';

/** What an armed fault did. */
export interface FiredFault {
  /** The statement it replaced. */
  replaced: string;
  /** The server process of the connection it happened on. */
  pid: number;
}

const FAULT: Statement = { text: 'SELECT 1 / 0 AS injected_fault', values: [] };

/** The statements of a round trip, to replace one in place (a test-only reach into its private exchanges). */
function exchangesOf(roundTrip: RoundTrip): { statement: Statement }[] {
  return (roundTrip as unknown as { exchanges: { statement: Statement }[] }).exchanges;
}

/**
 * Fails one statement of the next transaction this process begins: once armed with a position, the statement given
 * that many statements after the next BEGIN (1 is the first after BEGIN; the last is COMMIT) is replaced by one that
 * divides by zero. Every pg Client of the process is watched, so the transaction may be any request's.
 */
export function faultInjector(t: Test): {
  arm(position: number): void;
  /** The fault the last armed position fired, if the transaction reached it. */
  fired(): FiredFault | undefined;
  /** Counts the statements of the next transaction, BEGIN excluded and COMMIT included. */
  count(): () => number;
} {
  const original = pg.Client.prototype.query;
  let armedAt: number | null = null;
  let counting: { client: pg.Client; sent: number } | null = null;
  let counted: { client: pg.Client | null; sent: number; done: boolean } | null = null;
  let last: FiredFault | undefined;

  const watch = (client: pg.Client, exchange: { statement: Statement }) => {
    const text = exchange.statement.text;
    if (counted && !counted.done) {
      if (!counted.client && text === 'BEGIN') counted.client = client;
      else if (counted.client === client) {
        counted.sent += 1;
        if (/^(COMMIT|ROLLBACK)$/.test(text)) counted.done = true;
      }
    }
    if (armedAt === null) return;
    if (!counting && text === 'BEGIN') counting = { client, sent: 0 };
    else if (counting && counting.client === client) {
      counting.sent += 1;
      if (counting.sent === armedAt) {
        last = { replaced: text, pid: (client as unknown as { processID: number }).processID };
        armedAt = null;
        counting = null;
        exchange.statement = FAULT;
      } else if (/^(COMMIT|ROLLBACK)$/.test(text)) counting = null;
    }
  };

  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0];
    if (first instanceof RoundTrip) for (const exchange of exchangesOf(first)) watch(this, exchange);
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  t.teardown(() => {
    pg.Client.prototype.query = original;
  });
  return {
    arm(position) {
      armedAt = position;
      counting = null;
      last = undefined;
    },
    fired: () => last,
    count() {
      counted = { client: null, sent: 0, done: false };
      const state = counted;
      return () => state.sent;
    },
  };
}
