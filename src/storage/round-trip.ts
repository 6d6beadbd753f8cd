import { createHash } from 'node:crypto';
import pg from 'pg';
import { prepareValue } from 'pg/lib/utils';
import { serialize } from 'pg-protocol';
import type { Statement } from './postgres.js';

/**
 * One round trip of the extended protocol: for each statement Parse (once per connection for a named one), Bind with
 * its values as parameters, Describe and Execute, then a single Sync, written to the socket in one write (the
 * messages made with pg-protocol, pg's own serializer). The server runs
 * the statements in order and answers them in order; should one fail, it skips the rest up to the Sync, so nothing
 * given after a failing statement ever runs, inside a transaction block or not. One Sync means one ReadyForQuery and
 * one flush on each side per round trip, however many statements it carries.
 *
 * It is handed to `client.query()` as a pg Submittable (pg's documented extension point, the one pg-cursor uses):
 * pg writes nothing of its own for it and gives it the server's messages until ReadyForQuery.
 */

/** A statement waiting for its answer. */
export interface Exchange {
  statement: Statement;
  /** Named and parsed once per connection; unnamed statements are parsed and planned for their own values each time. */
  prepared: boolean;
  resolve(result: pg.QueryResult): void;
  reject(error: unknown): void;
}

/** A statement given after a failing one in the same round trip: the server skipped it. */
export class SkippedAfterFailure extends Error {
  constructor(readonly failure: unknown) {
    super('The statement was not run: an earlier statement of its round trip failed');
    this.name = 'SkippedAfterFailure';
  }
}

const names = new Map<string, string>();

/** A stable statement name per text, so that each connection parses and plans a statement once. */
export function statementName(text: string): string {
  let name = names.get(text);
  if (!name) {
    name = `vcrm_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
    names.set(text, name);
  }
  return name;
}

/**
 * The names each connection has been sent a Parse for. A connection on which anything failed is destroyed, never
 * reused (see pipeline.ts), so a Parse that a failure made the server skip can never make this record lie to a
 * later caller.
 */
const parsedOn = new WeakMap<pg.ClientBase, Set<string>>();

function parsedBy(client: pg.ClientBase): Set<string> {
  let parsed = parsedOn.get(client);
  if (!parsed) {
    parsed = new Set();
    parsedOn.set(client, parsed);
  }
  return parsed;
}

/** What pg's Result does beyond its declared type: the methods its own Query calls to build a result. */
interface ResultBuilder extends pg.QueryResult {
  addFields(fields: unknown[]): void;
  parseRow(values: unknown[]): pg.QueryResultRow;
  addRow(row: pg.QueryResultRow): void;
  addCommandComplete(message: unknown): void;
}

// With no row mode and no type overrides, pg's Result makes rows as objects, parsed with pg's global type parsers
// (bigint as number: see postgres.ts), as pg's own queries do.
const Result = pg.Result as unknown as new () => ResultBuilder;
const newResult = () => new Result();

interface ProtocolConnection {
  stream: { write(buffer: Buffer): boolean };
  sendCopyFail(message: string): void;
}

// The same for every statement: describe the unnamed portal (so rows come with their field types), run it whole.
const DESCRIBE_PORTAL = serialize.describe({ type: 'P', name: '' });
const EXECUTE_ALL = serialize.execute({ portal: '', rows: 0 });

export class RoundTrip {
  private next = 0;
  private result = newResult();
  private failure: unknown = undefined;

  constructor(
    private readonly client: pg.ClientBase,
    private readonly exchanges: readonly Exchange[],
  ) {}

  /** The statements it carries, in order, and whether each goes as a prepared (named) statement. */
  get statements(): readonly (Statement & { prepared: boolean })[] {
    return this.exchanges.map((e) => ({ ...e.statement, prepared: e.prepared }));
  }

  /** Sends it on the client, behind anything the client is still waiting for. */
  send(): void {
    // pg's types declare only its own Query here; a Submittable is the documented alternative.
    this.client.query(this as unknown as pg.QueryConfig);
  }

  /**
   * Called by pg when it is this round trip's turn on the connection. The whole message is built before anything is
   * written, so a value that cannot be converted fails the round trip with nothing sent (pg then hands the error to
   * handleError and goes on with the connection).
   */
  submit(connection: ProtocolConnection): Error | undefined {
    const parsed = parsedBy(this.client);
    const parsing: string[] = [];
    let message: Buffer;
    try {
      const parts: Buffer[] = [];
      for (const { statement, prepared } of this.exchanges) {
        const name = prepared ? statementName(statement.text) : '';
        if (!name || !(parsed.has(name) || parsing.includes(name))) {
          parts.push(serialize.parse({ name, text: statement.text }));
          if (name) parsing.push(name);
        }
        parts.push(serialize.bind({ statement: name, values: statement.values.map(prepareValue) }));
        parts.push(DESCRIBE_PORTAL, EXECUTE_ALL);
      }
      parts.push(serialize.sync());
      message = Buffer.concat(parts);
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
    for (const name of parsing) parsed.add(name);
    connection.stream.write(message);
    return undefined;
  }

  handleRowDescription(message: { fields: unknown[] }): void {
    this.result.addFields(message.fields);
  }

  handleDataRow(message: { fields: unknown[] }): void {
    this.result.addRow(this.result.parseRow(message.fields));
  }

  handleCommandComplete(message: unknown): void {
    this.result.addCommandComplete(message);
    this.settleCurrent();
  }

  handleEmptyQuery(): void {
    this.settleCurrent();
  }

  handlePortalSuspended(): void {
    this.fail(new Error('A portal was suspended, which a round trip never asks for'));
  }

  handleCopyInResponse(connection: ProtocolConnection): void {
    connection.sendCopyFail('COPY FROM STDIN is not supported in a round trip');
  }

  handleCopyData(): void {}

  /** A statement's ErrorResponse, or the connection's loss: the current statement fails, the rest were skipped. */
  handleError(error: unknown): void {
    this.fail(error);
  }

  handleReadyForQuery(): void {
    if (this.next < this.exchanges.length) this.fail(new Error('The server answered fewer statements than were sent'));
  }

  private settleCurrent(): void {
    const exchange = this.exchanges[this.next++];
    const result = this.result;
    this.result = newResult();
    exchange?.resolve(result);
  }

  private fail(error: unknown): void {
    if (this.failure !== undefined) return;
    this.failure = error;
    const current = this.exchanges[this.next];
    current?.reject(error);
    for (const skipped of this.exchanges.slice(this.next + 1)) skipped.reject(new SkippedAfterFailure(error));
    this.next = this.exchanges.length;
  }
}
