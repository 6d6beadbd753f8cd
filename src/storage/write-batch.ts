import type pg from 'pg';

/** What projections and trailing command writes run SQL through: the client itself, or a WriteBatch. */
export interface SqlRunner {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

const WRITE = /^\s*(INSERT|UPDATE|DELETE)\b/i;
const RETURNING = /\bRETURNING\b/i;

function arrayLiteral(values: unknown[]): string {
  const element = (value: unknown) => (value === null || value === undefined ? 'NULL' : `"${String(value).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`);
  return `{${values.map(element).join(',')}}`;
}

/**
 * The text node-postgres would send for a parameter. Parameters go untyped, like a quoted literal, so PostgreSQL
 * infers the same types for the literal as it did for the parameter.
 */
function literal(client: pg.PoolClient, value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (Buffer.isBuffer(value)) return `'\\x${value.toString('hex')}'`;
  if (value instanceof Date) return client.escapeLiteral(value.toISOString());
  if (Array.isArray(value)) return client.escapeLiteral(arrayLiteral(value));
  if (typeof value === 'object') return client.escapeLiteral(JSON.stringify(value));
  return client.escapeLiteral(String(value));
}

export function inlineParameters(client: pg.PoolClient, text: string, values: unknown[]): string {
  return text.replace(/\$(\d+)\b/g, (_, n: string) => literal(client, values[Number(n) - 1]));
}

const DEFERRED = { command: 'DEFERRED', rowCount: null, oid: 0, fields: [], rows: [] } as unknown as pg.QueryResult;

/**
 * Writes whose result nobody reads (INSERT, UPDATE, DELETE without RETURNING) wait and go to the server in one
 * round trip with the next read, or with COMMIT. Every round trip saved on a command's tail is latency saved on
 * every write request. A failing write surfaces at that next round trip, still inside the transaction.
 */
export class WriteBatch implements SqlRunner {
  private pending: string[] = [];

  constructor(private readonly client: pg.PoolClient) {}

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
    if (WRITE.test(text) && !RETURNING.test(text)) {
      this.pending.push(inlineParameters(this.client, text, values));
      return DEFERRED as pg.QueryResult<R>;
    }
    await this.flush();
    return this.client.query<R>(text, values);
  }

  async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const statements = this.pending.join(';\n');
    this.pending = [];
    await this.client.query(statements);
  }

  /** The waiting writes and COMMIT, in one round trip. */
  async commit(): Promise<void> {
    const statements = [...this.pending, 'COMMIT'].join(';\n');
    this.pending = [];
    await this.client.query(statements);
  }
}
