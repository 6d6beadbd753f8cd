import fc from 'fast-check';
import t from 'tap';
import { readQuery } from '../../../src/console/list/component.js';
import { LEADS } from '../../../src/console/list/lists/leads.js';
import { readPage } from '../../../src/console/list/query.js';
import { checkProperty } from '../../support/properties.js';
import { consoleFixture } from '../support.js';
import { capture, copyLeads, viewAs } from './support.js';

const KEPT_SEEDS: number[] = [];
const SORTS = LEADS.columns.filter((c) => c.sort).map((c) => c.key);
const FILTERS = [{}, { stage: 'new' }, { owner: 'none' }, { q: 'copy' }, { stage: 'contacted', owner: 'none' }];

/** What happens between two page reads: rows inserted (they may or may not be seen), rows changed off the order key. */
const between = fc.oneof(
  fc.constant({ kind: 'nothing' as const }),
  fc.record({ kind: fc.constant('insert' as const), n: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('update' as const), every: fc.integer({ min: 2, max: 5 }) }),
);

t.test(
  'paging visits every matching row once, whatever the sort and filter, while rows are added and changed',
  async (t) => {
    const f = await consoleFixture(t);
    const template = await capture(f.app, f.ws.live, { full_name: 'Copy Template', phone: '+919811100000' });
    await copyLeads(f.app, template, 90);
    const view = viewAs(f.ws.workspace, 'owner');
    const ctx = { view, zone: 'UTC', now: new Date() };
    const ws = f.ws.workspace.id;

    /** Changes rows without touching the sort's key or the filter's fields: the city, and the change time unless sorted by it. */
    const update = async (sort: string, every: number) => {
      const touchTime = sort !== 'changed';
      await f.app.pool.query(
        `UPDATE leads SET body = (jsonb_set(body::jsonb, '{city}', to_jsonb('City ' || revision)))::json,
              revision = revision + 1,
              updated_at = CASE WHEN $3 THEN updated_at + interval '1 hour' ELSE updated_at END
        WHERE tenant_id = $1 AND abs(hashtext(id::text)) % $2 = 0`,
        [ws, every, touchTime],
      );
    };

    await checkProperty(
      t,
      'keyset paging under concurrent inserts and updates',
      fc.asyncProperty(
        fc.constantFrom(...SORTS),
        fc.constantFrom('asc', 'desc'),
        fc.integer({ min: 3, max: 30 }),
        fc.constantFrom(...FILTERS),
        fc.array(between, { minLength: 1, maxLength: 12 }),
        async (sort, dir, size, filter, actions) => {
          const { params, where, errors } = readQuery(LEADS, ctx, { ...filter, sort, dir });
          if (Object.keys(errors).length) throw new Error(JSON.stringify(errors));
          const idsNow = async () =>
            (
              await f.app.pool.query<{ id: string }>(`SELECT id FROM lead_rows WHERE ${where.sql}`, where.values)
            ).rows.map((r) => r.id);
          const before = new Set(await idsNow());
          const seen: string[] = [];
          let page = await readPage(f.app.pool, LEADS, where, { ...params, size });
          seen.push(...page.rows.map((r) => r.id));
          let step = 0;
          while (page.hasNext) {
            const action = actions[step++ % actions.length]!;
            if (action.kind === 'insert') await copyLeads(f.app, template, action.n, 'Late');
            if (action.kind === 'update') await update(sort, action.every);
            page = await readPage(f.app.pool, LEADS, where, {
              ...params,
              size,
              bound: { side: 'after', ...page.last! },
            });
            seen.push(...page.rows.map((r) => r.id));
          }
          await f.app.pool.query(`DELETE FROM leads WHERE tenant_id = $1 AND body->>'full_name' LIKE 'Late %'`, [ws]);
          const twice = seen.filter((id, i) => seen.indexOf(id) !== i);
          if (twice.length) throw new Error(`seen twice: ${twice.join(', ')}`);
          const missed = [...before].filter((id) => !seen.includes(id));
          if (missed.length) throw new Error(`${missed.length} of ${before.size} matching rows never seen`);
        },
      ),
      20,
      KEPT_SEEDS,
    );
  },
);
