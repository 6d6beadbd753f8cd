import { randomUUID } from 'node:crypto';
import t from 'tap';
import { migrate } from '../../src/storage/migrate.js';
import { migrations } from '../../src/storage/migrations/index.js';
import { consumeQuota, LEADS_METRIC, quotaRefusal } from '../../src/workspaces/quota.js';
import { freshDatabase } from '../support/db.js';

t.test('migrations 50, 51 and 330 carry the usage and the stored answers over', async (t) => {
  const { pool } = await freshDatabase(t);
  await pool.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
  await migrate(
    pool,
    migrations.filter((m) => m.version < 50),
  );
  const [a, b] = [randomUUID(), randomUUID()];
  // The shard rows as the old count wrote them: a's November over three shards, b's over one, a's October.
  await pool.query(
    `INSERT INTO quota_usage (tenant_id, period, metric, shard, used) VALUES
       ($1, '2026-11', $3, 3, 2), ($1, '2026-11', $3, 17, 5), ($1, '2026-11', $3, 63, 1),
       ($2, '2026-11', $3, 0, 4), ($1, '2026-10', $3, 9, 7)`,
    [a, b, LEADS_METRIC],
  );
  await pool.query(
    `INSERT INTO lead_idempotency (tenant_id, sandbox, key, request_hash, status, body, created_at, expires_at)
     VALUES ($1, false, 'k-1', 'h', 201, '{"id":"x"}', now(), now() + interval '1 day')`,
    [a],
  );
  await migrate(pool);

  const counters = await pool.query(
    'SELECT tenant_id, period, used::int AS used, allowed FROM quota_counters ORDER BY tenant_id = $1 DESC, period',
    [a],
  );
  t.same(counters.rows, [
    { tenant_id: a, period: '2026-10', used: 7, allowed: null },
    { tenant_id: a, period: '2026-11', used: 8, allowed: null },
    { tenant_id: b, period: '2026-11', used: 4, allowed: null },
  ]);
  const answers = await pool.query(
    'SELECT operation, key, status, body FROM api_idempotency WHERE tenant_id = $1 ORDER BY operation',
    [a],
  );
  t.same(
    answers.rows,
    [
      { operation: 'createLead:public', key: 'k-1', status: 201, body: { id: 'x' } },
      { operation: 'createLead:secret', key: 'k-1', status: 201, body: { id: 'x' } },
    ],
    'a stored answer is replayed to either kind for the rest of its day, from the one store (migration 330)',
  );

  // b used 4 before the migration: with a limit of 5 one more fits, and the next is refused.
  const november = new Date('2026-11-20T12:00:00Z');
  await consumeQuota(pool, b, LEADS_METRIC, 5, november);
  const refused = await consumeQuota(pool, b, LEADS_METRIC, 5, november).then(
    () => undefined,
    (error: unknown) => error,
  );
  t.ok(quotaRefusal(refused, 5), 'past the limit the count is refused');
  t.equal(quotaRefusal(refused, null), undefined, 'never a quota refusal without a limit');
  const used = await pool.query(`SELECT used::int AS used FROM quota_counters WHERE tenant_id = $1`, [b]);
  t.equal(used.rows[0]!.used, 5);
});
