import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import type { BoardFilter } from '../../src/console/board/filter.js';
import { EXACT_COUNT_LIMIT, leadCards, leadStageCounts } from '../../src/console/board/leads-query.js';
import { checkProperty } from '../support/properties.js';
import { startApp } from '../support/app.js';

const STAGES = ['new', 'contacted', 'qualified', 'lost'];
const OWNERS = [randomUUID()];
const BRANCHES = [randomUUID(), randomUUID()];

interface Row {
  id: string;
  tenant: 0 | 1;
  sandbox: boolean;
  converted: boolean;
  stage: string;
  owner: string | null;
  branch: string;
  visa: string | null;
  country: string | null;
  /** Seconds after a fixed moment: ties are likely, so the order's id tie-break is exercised. */
  updated: number;
}

const rowArb = fc.record({
  id: fc.uuid({ version: 4 }),
  tenant: fc.constantFrom<0 | 1>(0, 0, 0, 1),
  sandbox: fc.constantFrom(false, false, false, true),
  converted: fc.constantFrom(false, false, false, true),
  stage: fc.constantFrom(...STAGES),
  owner: fc.constantFrom(null, ...OWNERS),
  branch: fc.constantFrom(...BRANCHES),
  visa: fc.constantFrom(null, 'work'),
  country: fc.constantFrom(null, 'CA'),
  updated: fc.integer({ min: 0, max: 5 }),
});

const filterArb: fc.Arbitrary<BoardFilter> = fc.record(
  {
    ownerId: fc.constantFrom('none', ...OWNERS),
    branchId: fc.constantFrom(...BRANCHES),
    visaType: fc.constant('work'),
    country: fc.constant('CA'),
  },
  { requiredKeys: [] },
);

/** The board by the model: the live, unconverted leads of the workspace under the filter, per stage. */
function model(rows: Row[], filter: BoardFilter, limit: number) {
  const shown = rows.filter(
    (r) =>
      r.tenant === 0 &&
      !r.sandbox &&
      !r.converted &&
      (filter.ownerId === undefined || (filter.ownerId === 'none' ? r.owner === null : r.owner === filter.ownerId)) &&
      (filter.branchId === undefined || r.branch === filter.branchId) &&
      (filter.visaType === undefined || r.visa === filter.visaType) &&
      (filter.country === undefined || r.country === filter.country),
  );
  const counts = new Map<string, number>();
  for (const r of shown) counts.set(r.stage, (counts.get(r.stage) ?? 0) + 1);
  const cards = new Map<string, string[]>();
  for (const stage of STAGES)
    cards.set(
      stage,
      shown
        .filter((r) => r.stage === stage)
        .sort((a, b) => b.updated - a.updated || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
        .slice(0, limit)
        .map((r) => r.id),
    );
  return { counts, cards };
}

t.test('the lead board reads, against a model: counts per stage and the first cards in the list order', async (t) => {
  const app = await startApp(t);
  const tenants = [randomUUID(), randomUUID()];
  const at = Date.parse('2026-11-01T10:00:00Z');
  await checkProperty(
    t,
    'lead board counts and cards equal the model for any leads and filter',
    fc.asyncProperty(
      fc.uniqueArray(rowArb, { minLength: 20, maxLength: 60, selector: (r) => r.id }),
      filterArb,
      fc.integer({ min: 1, max: 4 }),
      async (rows, filter, limit) => {
        await app.pool.query('DELETE FROM leads WHERE tenant_id = ANY($1::uuid[])', [tenants]);
        for (const r of rows) {
          const body = {
            id: r.id,
            stage: { key: r.stage, name: r.stage },
            visa_type: r.visa,
            country_interest: r.country,
          };
          const updated = new Date(at + r.updated * 1000);
          await app.pool.query(
            `INSERT INTO leads (id, tenant_id, sandbox, revision, branch_id, owner_id, converted, created_at, updated_at, body)
             VALUES ($1, $2, $3, 1, $4, $5, $6, $7, $7, $8)`,
            [r.id, tenants[r.tenant], r.sandbox, r.branch, r.owner, r.converted, updated, JSON.stringify(body)],
          );
        }
        const expected = model(rows, filter, limit);
        const counts = await leadStageCounts(app.pool, tenants[0]!, filter, STAGES);
        const cards = await leadCards(app.pool, tenants[0]!, filter, STAGES, limit);
        const got = new Map([...cards].map(([k, leads]) => [k, leads.map((l) => l.id)]));
        return (
          JSON.stringify(
            [...counts]
              .filter(([, c]) => c.n > 0)
              .map(([k, c]) => [k, c.n])
              .sort(),
          ) === JSON.stringify([...expected.counts].sort()) &&
          JSON.stringify([...got]) === JSON.stringify([...expected.cards])
        );
      },
    ),
    60,
  );
});

t.test('a stage past the exact bound is counted by the planner’s estimate, never below the bound', async (t) => {
  const app = await startApp(t);
  const tenant = randomUUID();
  const branch = randomUUID();
  await app.pool.query(
    `INSERT INTO leads (id, tenant_id, sandbox, revision, branch_id, converted, created_at, updated_at, body)
     SELECT gen_random_uuid(), $1, false, 1, $2, false, now(), now(),
            json_build_object('stage', json_build_object('key', CASE WHEN i <= $3 THEN 'lost' ELSE 'new' END))
       FROM generate_series(1, $3 + 7) AS i`,
    [tenant, branch, EXACT_COUNT_LIMIT + 500],
  );
  await app.pool.query('ANALYZE leads');
  const counts = await leadStageCounts(app.pool, tenant, {}, ['new', 'lost', 'qualified']);
  t.same(counts.get('new'), { n: 7, exact: true });
  t.same(counts.get('qualified'), { n: 0, exact: true });
  const lost = counts.get('lost')!;
  t.equal(lost.exact, false, 'past the bound: an estimate');
  t.ok(
    lost.n > EXACT_COUNT_LIMIT && lost.n < (EXACT_COUNT_LIMIT + 500) * 1.5,
    `about ${lost.n}, near ${EXACT_COUNT_LIMIT + 500}`,
  );
});
