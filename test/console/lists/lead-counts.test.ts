import t from 'tap';
import { readQuery } from '../../../src/console/list/component.js';
import { LEADS } from '../../../src/console/list/lists/leads.js';
import { countMatching } from '../../../src/console/list/query.js';
import { consoleFixture } from '../support.js';
import { recordingQueryable } from '../../support/sql-recorder.js';
import { capture, copyLeads, viewAs } from './support.js';

type Fixture = Awaited<ReturnType<typeof consoleFixture>>;

/** The lead list's count for a query, and the plan of the statement that counted. */
async function countAndPlan(f: Fixture, query: Record<string, string>) {
  const ctx = { view: viewAs(f.ws.workspace, 'owner'), zone: 'UTC', now: f.app.services.now() };
  const { where, errors } = readQuery(LEADS, ctx, query);
  if (Object.keys(errors).length) throw new Error(`refused: ${JSON.stringify(errors)}`);
  const { recording, seen } = recordingQueryable(f.app.pool);
  const count = await countMatching(recording, LEADS, where);
  const plan = await f.app.pool.query<{ 'QUERY PLAN': unknown }>(
    `EXPLAIN (FORMAT JSON) ${seen[0]!.text}`,
    seen[0]!.values,
  );
  return { count, plan: JSON.stringify(plan.rows[0]!['QUERY PLAN']) };
}

/** The same count through an inner join of the two tables, as lead_rows read before migration 350. */
async function innerJoinCount(f: Fixture, condition: string, values: unknown[]) {
  const { rows } = await f.app.pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM lead_order o JOIN leads l ON l.id = o.id
      WHERE o.tenant_id = $1 AND o.sandbox = false AND ${condition}`,
    [f.ws.workspace.id, ...values],
  );
  return Number(rows[0]!.n);
}

t.test(
  "a count filtered on lead_order's columns reads lead_order alone and counts what the joined rows count",
  async (t) => {
    const f = await consoleFixture(t);
    const first = await capture(f.app, f.ws.live, {
      full_name: 'Counted Lead',
      phone: '+919811133301',
      visa_type: 'student',
    });
    await copyLeads(f.app, first, 120);
    const lead = (
      await f.app.pool.query<{ owner_id: string | null; branch_id: string | null; visa_type: string }>(
        'SELECT owner_id, branch_id FROM lead_order WHERE id = $1',
        [first],
      )
    ).rows[0]!;

    const cases: [string, Record<string, string>, string, unknown[]][] = [
      ['a stage', { stage: 'contacted' }, 'o.stage_key = $2', ['contacted']],
      ['a visa type', { visa_type: 'student' }, 'o.visa_type = $2', ['student']],
      ['a source', { source: 'api' }, 'o.source_key = $2', ['api']],
      ['no filter', {}, 'true', []],
    ];
    if (lead.branch_id) cases.push(['a branch', { branch: lead.branch_id }, 'o.branch_id = $2', [lead.branch_id]]);
    if (lead.owner_id) cases.push(['an owner', { owner: lead.owner_id }, 'o.owner_id = $2', [lead.owner_id]]);
    for (const [what, query, condition, values] of cases) {
      const { count, plan } = await countAndPlan(f, query);
      const expected = await innerJoinCount(f, condition, values);
      t.ok(expected > 0, `${what}: ${expected} leads match`);
      t.same(count, { n: expected, exact: true }, `${what}: the same count`);
      t.notMatch(plan, /"Relation Name":"leads"/, `${what}: leads is not read`);
    }

    // A filter on a column of leads (the search box) still reads it, and counts only the rows it matches.
    const searched = await countAndPlan(f, { q: 'counted lead' });
    t.same(searched.count, { n: 1, exact: true }, 'the search counts its one match');
    t.match(searched.plan, /"Relation Name":"leads"/, 'and reads leads to find it');
  },
);
