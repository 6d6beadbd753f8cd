import pg from 'pg';
import type { Test } from 'tap';
import type { Statement } from '../../src/storage/postgres.js';

/** What an armed fault did. */
export interface FiredFault {
  /** The statement it replaced. */
  replaced: string;
  /** The server process of the connection it happened on. */
  pid: number;
}

const FAULT: Statement = { text: 'SELECT 1 / 0 AS injected_fault', values: [] };

/** The statement of a `client.query(text, values)` or `client.query({ text, values })` call. */
function statementOf(args: unknown[]): Statement | undefined {
  const [first, second] = args;
  if (typeof first === 'string') return { text: first, values: Array.isArray(second) ? second : [] };
  if (typeof first === 'object' && first !== null && 'text' in first && typeof first.text === 'string')
    return { text: first.text, values: 'values' in first && Array.isArray(first.values) ? first.values : [] };
  return undefined;
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

  /** Returns the statement to send instead, or undefined to send it as given. */
  const watch = (client: pg.Client, text: string): Statement | undefined => {
    if (counted && !counted.done) {
      if (!counted.client && text === 'BEGIN') counted.client = client;
      else if (counted.client === client) {
        counted.sent += 1;
        if (/^(COMMIT|ROLLBACK)$/.test(text)) counted.done = true;
      }
    }
    if (armedAt === null) return undefined;
    if (!counting && text === 'BEGIN') counting = { client, sent: 0 };
    else if (counting && counting.client === client) {
      counting.sent += 1;
      if (counting.sent === armedAt) {
        last = { replaced: text, pid: (client as unknown as { processID: number }).processID };
        armedAt = null;
        counting = null;
        return FAULT;
      } else if (/^(COMMIT|ROLLBACK)$/.test(text)) counting = null;
    }
    return undefined;
  };

  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const statement = statementOf(args);
    const replaced = statement && watch(this, statement.text);
    const sent = replaced ? [replaced.text, replaced.values] : args;
    return (original as (...a: unknown[]) => unknown).apply(this, sent);
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
