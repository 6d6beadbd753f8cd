import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { erasedAt, eraseKeys, liveKeys, PERSON_KEY_ROWS } from '../../src/commands/leads/erase-copies.js';
import { freshDatabase } from '../support/db.js';
import { checkProperty } from '../support/properties.js';

// A person's key rows are their lead's stream (found by the primary key: since migration 0044 the person index holds
// no lead streams) and the streams filed under them (applications, documents, tasks, invoices: found by the person
// index). Erasure's lookups must find exactly those rows, whatever else the table holds: other people's, the same
// person id in another workspace, erased rows, and people with no lead row (their lead written before encryption).

const row = fc.record({
  tenant: fc.integer({ min: 0, max: 1 }),
  person: fc.integer({ min: 0, max: 3 }),
  kind: fc.constantFrom(
    'lead' as const,
    'application' as const,
    'document' as const,
    'task' as const,
    'invoice' as const,
  ),
  erased: fc.boolean(),
});

t.test('property: erasure finds exactly the person’s key rows, in their workspace', async (t) => {
  const { pool } = await freshDatabase(t);
  await checkProperty(
    t,
    'person key rows',
    fc.asyncProperty(
      fc.array(row, { maxLength: 14 }),
      fc.integer({ min: 0, max: 1 }),
      fc.integer({ min: 0, max: 3 }),
      async (rows, tenantAt, personAt) => {
        const tenants = [randomUUID(), randomUUID()];
        const people = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
        // One lead stream per person at most: it is the lead's own stream, and stream ids are unique across workspaces.
        const leads = new Set<string>();
        const stored = rows.filter((r) => {
          if (r.kind !== 'lead') return true;
          const seen = leads.has(people[r.person]!);
          leads.add(people[r.person]!);
          return !seen;
        });
        const at = new Date('2026-11-20T10:00:00Z');
        for (const r of stored)
          await pool.query(
            `INSERT INTO personal_data_keys (stream_id, tenant_id, person_id, wrapped_key, created_at, erased_at)
             VALUES ($1, $2, $3, $4, $5, $6)`,
            [
              r.kind === 'lead' ? `lead-${people[r.person]}` : `${r.kind}-${randomUUID()}`,
              tenants[r.tenant],
              people[r.person],
              r.erased ? null : 's1:seed',
              at,
              r.erased ? at : null,
            ],
          );
        const tenant = tenants[tenantAt]!;
        const person = people[personAt]!;
        const mine = stored.filter((r) => r.tenant === tenantAt && r.person === personAt);
        const live = await liveKeys(pool, tenant, person);
        const when = await erasedAt(pool, tenant, person);
        const now = new Date('2026-11-21T10:00:00Z');
        await eraseKeys(pool, { tenantId: tenant, personId: person, streams: [], now });
        const after = await pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM personal_data_keys WHERE erased_at = $1`,
          [now],
        );
        await pool.query('DELETE FROM personal_data_keys');
        return (
          live === mine.filter((r) => !r.erased).length &&
          (when?.getTime() ?? null) === (mine.some((r) => r.erased) ? at.getTime() : null) &&
          after.rows[0]!.n === mine.filter((r) => !r.erased).length
        );
      },
    ),
    40,
  );
});

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  Plans?: PlanNode[];
}

const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

t.test('a lead’s key row is found by the primary key; the person index holds no lead streams', async (t) => {
  const { pool } = await freshDatabase(t);
  const tenant = randomUUID();
  // 20,000 people with a lead stream each, and one person with an application stream too.
  await pool.query(
    `INSERT INTO personal_data_keys (stream_id, tenant_id, person_id, wrapped_key, created_at)
     SELECT 'lead-' || p, $1, p, 's1:seed', now() FROM (SELECT gen_random_uuid() AS p FROM generate_series(1, 20000)) AS people`,
    [tenant],
  );
  const person = randomUUID();
  await pool.query(
    `INSERT INTO personal_data_keys (stream_id, tenant_id, person_id, wrapped_key, created_at)
     VALUES ('lead-' || $2::uuid::text, $1, $2::uuid, 's1:seed', now()),
            ('application-' || gen_random_uuid(), $1, $2::uuid, 's1:seed', now())`,
    [tenant, person],
  );
  await pool.query('VACUUM ANALYZE personal_data_keys');
  const size = await pool.query<{ entries: string }>(
    `SELECT reltuples::bigint::text AS entries FROM pg_class WHERE relname = 'personal_data_keys_person'`,
  );
  t.equal(size.rows[0]!.entries, '1', 'one entry in the person index: the application, none of the 20,001 leads');

  t.equal(await liveKeys(pool, tenant, person), 2, 'both of the person’s streams found');
  const explained = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*) FROM personal_data_keys WHERE ${PERSON_KEY_ROWS}`,
    [tenant, person],
  );
  const all = nodes(explained.rows[0]!['QUERY PLAN'][0].Plan);
  t.notOk(
    all.some((n) => n['Node Type'] === 'Seq Scan'),
    'no sequential scan of the key rows',
  );
  t.match(
    all.filter((n) => n['Index Name']).map((n) => [n['Index Name'], n['Actual Rows']]),
    [
      ['personal_data_keys_pkey', 1],
      ['personal_data_keys_person', 1],
    ],
    'the lead row by its primary key, the application by the person index',
  );
});
