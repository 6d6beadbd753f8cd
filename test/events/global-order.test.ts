// The global order of the log is (tx_id, position), compared as numbers. These tests write events with chosen
// transaction ids (a test may: the column only defaults to the writer's id) across the places where a text sort
// goes wrong (999 → 1000, 9,999 → 10,000, 99,999 → 100,000, 2^32 - 1 → 2^32) and read them back in batches.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type pg from 'pg';
import t from 'tap';
import { readAllWith } from '../../src/events/postgres-event-store.js';
import { START_OF_LOG, type GlobalPosition, type StoredEvent } from '../../src/events/types.js';
import { fanOutBatch } from '../../src/subscribers/webhook-fanout.js';
import { appFixture } from '../applications/support.js';
import { freshDatabase } from '../support/db.js';
import { checkProperty } from '../support/properties.js';

interface Placed {
  txId: bigint;
  position: number;
}

/** Transaction ids at or above this are never settled here: no cluster of ours reaches epoch 2. */
const UNSETTLED_FROM = 2n ** 33n;

/** Moves the cluster's transaction counter past `target`, so every id below it belongs to an ended transaction. */
async function burnTransactionIdsPast(pool: pg.Pool, target: bigint): Promise<void> {
  for (;;) {
    const current = BigInt(
      (await pool.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid')).rows[0]!.xid,
    );
    if (current > target) return;
    const count = Math.min(Number(target - current) + 10, 200_000);
    await pool.query(`DO $$ BEGIN FOR i IN 1..${count} LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP; END $$`);
  }
}

/**
 * Waits until every transaction id up to `highest` is settled: the oldest running transaction of the cluster is past
 * it. On a fresh cluster (the embedded server) the ids burnt above are recent, and a transaction another suite opened
 * before the burn, still running, keeps them unsettled for a moment; on a long-used server they are settled at once.
 */
async function waitUntilSettled(pool: pg.Pool, highest: bigint): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const xmin = BigInt(
      (await pool.query<{ xmin: string }>('SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin')).rows[0]!
        .xmin,
    );
    if (xmin > highest) return;
    if (Date.now() > deadline)
      throw new Error(`transaction ${xmin} of another session kept ${highest} unsettled for 60 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Writes one event per placement, with the chosen transaction id and position. */
async function writeEvents(
  pool: pg.Pool,
  placed: readonly Placed[],
  tenantId: string = randomUUID(),
  type = 'test.happened',
): Promise<string[]> {
  const ids = placed.map(() => randomUUID());
  await pool.query(
    `INSERT INTO events (position, tx_id, id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at, hash)
     OVERRIDING SYSTEM VALUE
     SELECT p.position, p.tx::xid8, p.id, 'test-' || p.id, 0, $4, $5, false,
            jsonb_build_object('payload', jsonb_build_object('n', p.n)), '{}', now(), decode(repeat('00', 32), 'hex')
       FROM unnest($1::bigint[], $2::text[], $3::uuid[]) WITH ORDINALITY AS p(position, tx, id, n)`,
    [placed.map((p) => p.position), placed.map((p) => p.txId.toString()), ids, type, tenantId],
  );
  return ids;
}

/** Reads the whole log from the start in batches of `batchSize`, as a subscriber or a rebuild does. */
async function readInBatches(pool: pg.Pool, batchSize: number, onlySettled: boolean): Promise<StoredEvent[]> {
  const read: StoredEvent[] = [];
  let after: GlobalPosition = START_OF_LOG;
  for (;;) {
    const batch = await readAllWith(pool, after, batchSize, onlySettled);
    if (batch.length === 0) return read;
    if (batch.length > batchSize) throw new Error(`a batch of ${batch.length} rows, asked for ${batchSize}`);
    read.push(...batch);
    after = batch[batch.length - 1]!.position;
  }
}

const inGlobalOrder = (a: Placed, b: Placed) =>
  a.txId === b.txId ? a.position - b.position : a.txId < b.txId ? -1 : 1;
const placement = (e: StoredEvent): string => `${e.position.txId}/${e.position.position}`;
const expected = (placed: readonly Placed[]) => [...placed].sort(inGlobalOrder).map((p) => `${p.txId}/${p.position}`);

/** Ten transactions of three events on each side of `boundary`, positions falling as transaction ids rise. */
function aroundBoundary(boundary: bigint, firstPosition: number): Placed[] {
  const placed: Placed[] = [];
  let position = firstPosition;
  for (let tx = boundary - 5n; tx < boundary + 5n; tx++) {
    for (let i = 0; i < 3; i++) placed.push({ txId: tx, position: position + i });
    position -= 3;
  }
  return placed;
}

t.test(
  'a reader crossing 999 → 1000, 9,999 → 10,000 and 99,999 → 100,000 in small batches reads every event once, in order',
  async (t) => {
    const { pool } = await freshDatabase(t);
    await burnTransactionIdsPast(pool, 100_100n);
    const placed = [...aroundBoundary(1000n, 900), ...aroundBoundary(10_000n, 600), ...aroundBoundary(100_000n, 300)];
    await writeEvents(pool, placed);
    await waitUntilSettled(pool, 100_005n);
    for (const batchSize of [1, 7, 500]) {
      t.same(
        (await readInBatches(pool, batchSize, true)).map(placement),
        expected(placed),
        `settled reads, batch ${batchSize}`,
      );
      t.same(
        (await readInBatches(pool, batchSize, false)).map(placement),
        expected(placed),
        `all reads, batch ${batchSize}`,
      );
    }
  },
);

t.test('the reader uses the (tx_id, position) index rather than sorting the table', async (t) => {
  const { pool } = await freshDatabase(t);
  await pool.query(
    `INSERT INTO events (tx_id, id, stream_id, revision, type, tenant_id, sandbox, data, metadata, created_at, hash)
     SELECT (g / 3 + 1)::text::xid8, gen_random_uuid(), 'test-' || g, 0, 'test.happened', gen_random_uuid(), false, '{}', '{}', now(),
            decode(repeat('00', 32), 'hex')
       FROM generate_series(1, 20000) AS g`,
  );
  await pool.query('ANALYZE events');
  // The reader's own statement, explained with the same parameters a catch-up batch sends.
  const client = await pool.connect();
  try {
    const original = client.query.bind(client);
    let plan = '';
    const explaining = {
      query: async (text: string, values?: unknown[]) => {
        const result = await original<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values);
        plan = result.rows.map((r) => r['QUERY PLAN']).join('\n');
        return { rows: [] } as unknown as pg.QueryResult;
      },
    };
    await readAllWith(explaining as unknown as pg.PoolClient, { txId: '5000', position: 0 }, 500);
    t.match(plan, /Index Scan using events_global_order/, 'an index scan in global order');
    t.notMatch(plan, /Sort/, 'no sort of the table');
  } finally {
    client.release();
  }
});

t.test(
  'property: reading in batches yields every settled event exactly once, in (tx_id, position) order',
  async (t) => {
    const { pool } = await freshDatabase(t);
    await burnTransactionIdsPast(pool, 1_000_100n);
    await waitUntilSettled(pool, 1_000_002n);
    // Transaction ids near the places a text sort breaks, anywhere below them, and (never settled) at and past 2^33.
    const boundaries = [10n, 100n, 1000n, 10_000n, 100_000n, 1_000_000n];
    const settledTx = fc.oneof(
      fc.constantFrom(...boundaries).chain((b) => fc.bigInt(b - 3n, b + 2n)),
      fc.bigInt(1n, 1_000_000n),
    );
    const unsettledTx = fc.oneof(
      fc.bigInt(UNSETTLED_FROM, UNSETTLED_FROM + 5n),
      fc.bigInt(2n ** 40n - 3n, 2n ** 40n + 3n),
      fc.bigInt(UNSETTLED_FROM, 2n ** 62n),
    );
    const transactions = fc.array(
      fc.record({
        txId: fc.oneof({ weight: 4, arbitrary: settledTx }, { weight: 1, arbitrary: unsettledTx }),
        events: fc.integer({ min: 1, max: 4 }),
      }),
      { minLength: 0, maxLength: 40 },
    );
    // Positions are unique across the log, and rise with insertion, not with transaction id: shuffle them.
    const log = transactions.chain((txs) => {
      const unique = [...new Map(txs.map((tx) => [tx.txId, tx])).values()];
      const total = unique.reduce((n, tx) => n + tx.events, 0);
      return fc
        .uniqueArray(fc.integer({ min: 1, max: 2_000_000_000 }), { minLength: total, maxLength: total })
        .map((positions) => {
          let next = 0;
          return unique.flatMap((tx) =>
            Array.from({ length: tx.events }, () => ({ txId: tx.txId, position: positions[next++]! })),
          );
        });
    });

    await checkProperty(
      t,
      'reading in batches yields every settled event once, in order',
      fc.asyncProperty(log, fc.integer({ min: 1, max: 25 }), async (placed, batchSize) => {
        await pool.query('TRUNCATE events');
        await writeEvents(pool, placed);
        const settled = placed.filter((p) => p.txId < UNSETTLED_FROM);
        const readSettled = (await readInBatches(pool, batchSize, true)).map(placement);
        const readAll = (await readInBatches(pool, batchSize, false)).map(placement);
        if (JSON.stringify(readSettled) !== JSON.stringify(expected(settled)))
          throw new Error(`settled read: ${readSettled.join(' ')}`);
        if (JSON.stringify(readAll) !== JSON.stringify(expected(placed)))
          throw new Error(`whole read: ${readAll.join(' ')}`);
      }),
      120,
    );
  },
);

t.test(
  'the webhook fan-out with a backlog bigger than its batch across 999 → 1000 records a delivery for every event',
  async (t) => {
    const f = await appFixture(t);
    const { app, ws } = f;
    const pool = app.pool;
    // An endpoint that is never delivered to (the workers do not run here): only the recorded deliveries count.
    const created = await app.request('/v1/webhooks', {
      method: 'POST',
      key: ws.live,
      json: { url: 'https://93.184.216.34/crm', events: ['lead.created'] },
    });
    t.equal(created.status, 201);
    const endpointId = ((await created.json()) as { id: string }).id;
    // The fan-out starts from its checkpoint at the start of the log; the endpoint counts as created before everything.
    await fanOutBatch(pool, app.services.personalData, new Date());
    await pool.query("UPDATE subscription_checkpoints SET tx_id = '0', position = 0");
    await pool.query("UPDATE webhook_endpoints SET created_tx_id = '1', created_position = 0 WHERE id = $1", [
      endpointId,
    ]);

    const placed = aroundBoundary(1000n, 500);
    const ids = await writeEvents(pool, placed, ws.workspace.id, 'lead.created');
    for (let step = 0; step < 100; step++) {
      const result = await fanOutBatch(pool, app.services.personalData, new Date(), 4);
      if (result.events === 0) break;
    }
    const delivered = await pool.query<{ event_id: string }>(
      'SELECT event_id FROM webhook_deliveries WHERE endpoint_id = $1 AND event_id = ANY($2::uuid[])',
      [endpointId, ids],
    );
    t.equal(delivered.rowCount, placed.length, 'every event of the backlog became a delivery');
    const checkpoint = await pool.query<{ tx: string }>(
      "SELECT tx_id::text AS tx FROM subscription_checkpoints WHERE name = 'webhook-fanout'",
    );
    t.ok(BigInt(checkpoint.rows[0]!.tx) >= 1004n, 'the checkpoint moved past the last of them');
  },
);
