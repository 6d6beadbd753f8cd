import pg from 'pg';
import type { Test } from 'tap';
import type { Queryable } from '../../../src/storage/postgres.js';
import { freshDatabase } from '../../support/db.js';

/*
 * What a statement reads, counted from EXPLAIN ANALYZE: the rows each scan of a table returned or filtered out. It
 * does not depend on the machine's speed, so tests can bound it: a statement that reads what it touches, whatever
 * PostgreSQL's statistics say, against one that reads a backlog or a log (test/webhooks/stale-statistics.test.ts,
 * endpoint-log-reads.test.ts).
 */

/** The instant the tests' rows are written around. */
export const NOW = new Date('2026-11-20T10:00:00.000Z');
/** A delivery body of a realistic length (the rows' width matters to the planner). */
export const BODY = 'x'.repeat(600);

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  'Subplan Name'?: string;
  Plans?: PlanNode[];
}

/** Rows of `relation` the plan's scans read: those they returned and those their filters dropped. */
function rowsReadOf(node: PlanNode, relation: string): number {
  const own =
    node['Node Type'].endsWith('Scan') && node['Relation Name'] === relation
      ? ((node['Actual Rows'] ?? 0) +
          (node['Rows Removed by Filter'] ?? 0) +
          (node['Rows Removed by Index Recheck'] ?? 0)) *
        (node['Actual Loops'] ?? 1)
      : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsReadOf(child, relation), 0);
}

/** The subplan of the CTE `name` (as EXPLAIN names it: "CTE name"), if the plan has one. */
function ctePlan(node: PlanNode, name: string): PlanNode | undefined {
  if (node['Subplan Name'] === `CTE ${name}`) return node;
  for (const child of node.Plans ?? []) {
    const found = ctePlan(child, name);
    if (found) return found;
  }
  return undefined;
}

export interface RowsRead {
  deliveries: number;
  endpoints: number;
  /** Of the deliveries, those read by the statement's CTE `cte` (which it must have). */
  deliveriesIn(cte: string): number;
}

/** Runs `sql` under EXPLAIN ANALYZE (it runs: callers roll back) and returns the rows of deliveries and endpoints it read. */
export async function rowsRead(client: pg.ClientBase, sql: string, values: unknown[] = []): Promise<RowsRead> {
  const result = await client.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`,
    values,
  );
  const plan = result.rows[0]!['QUERY PLAN'][0]!.Plan;
  return {
    deliveries: rowsReadOf(plan, 'webhook_deliveries'),
    endpoints: rowsReadOf(plan, 'webhook_endpoints'),
    deliveriesIn: (cte) => {
      const sub = ctePlan(plan, cte);
      // A bound on a step the plan does not have would hold for nothing.
      if (!sub) throw new Error(`The plan has no CTE ${cte}`);
      return rowsReadOf(sub, 'webhook_deliveries');
    },
  };
}

/**
 * A Queryable on `client` that runs each statement twice: first under EXPLAIN ANALYZE in a savepoint rolled back at
 * once (its reads are recorded in `reads`), then for real, so a function of several statements runs as it would.
 */
export function explainingEach(
  client: pg.ClientBase,
  options: { prepared?: boolean } = {},
): { sql: Queryable; reads: RowsRead[] } {
  const reads: RowsRead[] = [];
  // Prepared statements outlive transactions: each text is prepared once per connection, as a pooled connection does.
  const prepared = preparedOn.get(client) ?? new Map<string, string>();
  preparedOn.set(client, prepared);
  const sql: Queryable = {
    async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values: unknown[] = []) {
      await client.query('SAVEPOINT explained');
      if (options.prepared) {
        // As a statement prepared by name runs: PREPARE once per text, then EXECUTE, whose plan is the generic one
        // under plan_cache_mode = force_generic_plan. EXECUTE takes no parameters: the values go as literals.
        let name = prepared.get(text);
        if (name === undefined) {
          name = `explained_${prepared.size + 1}`;
          await client.query(`PREPARE ${name} AS ${text}`);
          prepared.set(text, name);
        }
        const literals = values.map((v) => client.escapeLiteral(literalText(v)));
        reads.push(await rowsRead(client, `EXECUTE ${name}${literals.length ? `(${literals.join(', ')})` : ''}`));
      } else {
        reads.push(await rowsRead(client, text, values));
      }
      await client.query('ROLLBACK TO SAVEPOINT explained');
      return client.query<R>(text, values);
    },
  };
  return { sql, reads };
}

const preparedOn = new WeakMap<pg.ClientBase, Map<string, string>>();

/** A value in the text form pg sends it in: times in ISO form, arrays as array literals, the rest as strings. */
export function literalText(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value))
    return `{${value.map((item) => `"${String(item).replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(',')}}`;
  return String(value);
}

export async function rolledBack<T>(client: pg.ClientBase, work: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    return await work();
  } finally {
    await client.query('ROLLBACK');
  }
}

export async function connection(t: Test): Promise<pg.Client> {
  const { url } = await freshDatabase(t, undefined, 1);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  t.teardown(() => client.end());
  return client;
}
