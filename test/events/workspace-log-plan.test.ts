import { randomUUID } from 'node:crypto';
import t from 'tap';
import { PostgresEventStore } from '../../src/events/postgres-event-store.js';
import { START_OF_LOG } from '../../src/events/types.js';
import { verifyChains } from '../../src/events/verify-chain.js';
import {
  committedBehindRunning,
  countWorkspaceEventsAfter,
  logHorizon,
  readWorkspaceLogWith,
  streamHeadsAt,
} from '../../src/events/workspace-log.js';
import { recordingQueryable } from '../support/sql-recorder.js';
import { freshDatabase } from '../support/db.js';
import { context } from '../support/event-store-scenarios.js';

// One workspace's log is read from its own range of events_tenant_order, whatever the other workspaces hold: the
// plans of export's, import's and verify's statements, taken with EXPLAIN ANALYZE, read only the small workspace's
// rows although a large one shares the table. Plans are checked, never times.

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/**
 * The log reader returns only events of transactions older than every transaction running on the server, whatever its
 * database: a suite running beside this one may hold one open for a moment. Waits until the workspace's last commit
 * is behind them all, so the reads below see all of its events (they would, a moment later, in the service too).
 */
async function untilBehindEveryRunningTransaction(pool: import('pg').Pool, tenantId: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const result = await pool.query<{ behind: boolean }>(
      `SELECT (SELECT max(tx_id) FROM events WHERE tenant_id = $1) < pg_snapshot_xmin(pg_current_snapshot()) AS behind`,
      [tenantId],
    );
    if (result.rows[0]!.behind) return;
    if (Date.now() > deadline) throw new Error('a transaction on the server stayed open for 30 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

t.test('export, count, heads and verify read only the workspace asked for', async (t) => {
  const { pool } = await freshDatabase(t);
  const store = new PostgresEventStore(pool, []);
  const big = randomUUID();
  const small = randomUUID();
  // The large workspace: 6,000 events in 60 transactions; the small one: 4 events, written in between.
  for (let batch = 0; batch < 60; batch++) {
    await store.transact(context(big), [], async (tx) => {
      for (let i = 0; i < 10; i++)
        await tx.append(
          `test-${randomUUID()}`,
          'no_stream',
          Array.from({ length: 10 }, () => ({ type: 'test.happened', data: { batch } })),
        );
    });
    if (batch % 20 === 0)
      await store.transact(context(small), [], (tx) =>
        tx.append(`test-${randomUUID()}`, 'no_stream', [{ type: 'test.happened', data: { batch } }]),
      );
  }
  await store.transact(context(small), [], (tx) =>
    tx.append(`test-${randomUUID()}`, 'no_stream', [{ type: 'test.happened', data: { last: true } }]),
  );
  await pool.query('VACUUM ANALYZE events');
  await untilBehindEveryRunningTransaction(pool, small);

  const { recording, seen: sent } = recordingQueryable(pool);
  const page = await readWorkspaceLogWith(recording, small, START_OF_LOG, 500);
  t.equal(page.length, 4, 'the small workspace has its 4 events');
  t.equal(await countWorkspaceEventsAfter(recording, small, START_OF_LOG), 4);
  const last = { txId: page.at(-1)!.position.txId, position: page.at(-1)!.position.position };
  t.equal((await streamHeadsAt(recording, small, last)).length, 4);
  t.equal(await committedBehindRunning(recording, small, last, await logHorizon(pool)), false);

  for (const statement of sent.filter((s) => /FROM events/.test(s.text))) {
    const explained = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`,
      statement.values,
    );
    const all = nodes(explained.rows[0]!['QUERY PLAN'][0].Plan);
    const name = statement.text.trim().split(/\s+/).slice(0, 4).join(' ');
    const onEvents = all.filter((n) => n['Relation Name'] === 'events');
    t.ok(
      onEvents.some((n) => n['Index Name'] === 'events_tenant_order'),
      `${name}…: read through events_tenant_order`,
    );
    t.notOk(
      onEvents.some((n) => n['Node Type'] === 'Seq Scan'),
      `${name}…: no sequential scan of events`,
    );
    const read = onEvents.reduce(
      (sum, n) => sum + (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1) + (n['Rows Removed by Filter'] ?? 0),
      0,
    );
    t.ok(read <= 10, `${name}…: ${read} rows read, not the other workspace's 6,000`);
  }

  const verified = await verifyChains(pool, small);
  t.match(verified, { events: 4, broken: null }, 'verify of the small workspace passes (same range, same shape)');
});
