import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { listLeads } from '../../src/projections/leads-queries.js';
import { freshDatabase } from '../support/db.js';
import { checkProperty } from '../support/properties.js';

/*
 * Paging GET /v1/leads (src/projections/leads-queries.ts: one statement text for each combination of updated_since
 * and cursor, every value through a sub-select, prepared by name or not): over any leads of a workspace and mode, with
 * ties in updated_at, other workspaces' and the other mode's leads beside them, any page size and any updated_since,
 * walking the cursors yields every lead updated at or after updated_since exactly once, in (updated_at, id) order, and
 * nothing else. Run on one pool across runs, so the prepared statements reach their generic plans.
 */
const BASE = Date.parse('2026-11-01T10:00:00.000Z');
const TENANT = randomUUID();
const OTHER_TENANT = randomUUID();

interface Row {
  tenant: 'ours' | 'other';
  sandbox: boolean;
  /** Seconds after BASE (few values, so many ties). */
  at: number;
}

const row: fc.Arbitrary<Row> = fc.record({
  tenant: fc.constantFrom<Row['tenant']>('ours', 'ours', 'ours', 'other'),
  sandbox: fc.boolean(),
  at: fc.nat({ max: 12 }),
});

t.test('walking the pages of the lead list yields each lead of the workspace and mode once, in order', async (t) => {
  const { pool } = await freshDatabase(t, undefined, 4);
  const run = async (rows: Row[], limit: number, since: number | null, sandbox: boolean, named: boolean) => {
    await pool.query('DELETE FROM leads');
    const inserted = rows.map((r) => ({ ...r, id: randomUUID() }));
    for (const r of inserted) {
      const at = new Date(BASE + r.at * 1000);
      await pool.query(
        `INSERT INTO leads (id, tenant_id, sandbox, revision, phone, email, branch_id, owner_id, converted, created_at, updated_at, body)
         VALUES ($1, $2, $3, 0, NULL, NULL, $4, NULL, false, $5, $5, $6)`,
        [r.id, r.tenant === 'ours' ? TENANT : OTHER_TENANT, r.sandbox, randomUUID(), at, JSON.stringify({ id: r.id })],
      );
    }
    const expected = inserted
      .filter((r) => r.tenant === 'ours' && r.sandbox === sandbox && (since === null || r.at >= since))
      .sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((r) => r.id);
    const seen: string[] = [];
    let after: { updatedAt: Date; id: string } | undefined;
    for (let page = 0; page <= expected.length + 1; page++) {
      const result = await listLeads(
        pool,
        TENANT,
        sandbox,
        {
          filters: { updated_since: since === null ? undefined : new Date(BASE + since * 1000).toISOString() },
          after,
          limit,
          now: new Date(BASE + 60_000),
        },
        { namedStatements: named },
      );
      const ids = (JSON.parse(`[${result.json}]`) as { id: string }[]).map((lead) => lead.id);
      if (ids.length > limit) return `a page of ${ids.length} for a limit of ${limit}`;
      seen.push(...ids);
      if (result.next === null) break;
      if (ids.length !== limit) return `a page of ${ids.length} with a next cursor, limit ${limit}`;
      after = result.next;
    }
    return JSON.stringify(seen) === JSON.stringify(expected)
      ? null
      : `pages ${JSON.stringify(seen)} against ${JSON.stringify(expected)}`;
  };
  await checkProperty(
    t,
    'pages walked by cursor are the workspace and mode’s leads since updated_since, once each, in order',
    fc.asyncProperty(
      fc.array(row, { maxLength: 24 }),
      fc.integer({ min: 1, max: 6 }),
      fc.option(fc.nat({ max: 13 }), { nil: null }),
      fc.boolean(),
      fc.boolean(),
      async (rows, limit, since, sandbox, named) => {
        const wrong = await run(rows, limit, since, sandbox, named);
        if (wrong !== null) throw new Error(wrong);
      },
    ),
    60,
  );
});
