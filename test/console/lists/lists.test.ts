import t, { type Test } from 'tap';
import { convertLeadToApplication } from '../../../src/commands/applications/convert-lead.js';
import { createTask } from '../../../src/commands/tasks/task-commands.js';
import { staffContext } from '../../../src/commands/run-command.js';
import { readQuery } from '../../../src/console/list/component.js';
import { APPLICATIONS } from '../../../src/console/list/lists/applications.js';
import { INVOICES } from '../../../src/console/list/lists/invoices.js';
import { LEADS } from '../../../src/console/list/lists/leads.js';
import { TASKS } from '../../../src/console/list/lists/tasks.js';
import { countMatching, eachBatch, EXACT_COUNT_LIMIT, readPage } from '../../../src/console/list/query.js';
import type { ListSpec, Query } from '../../../src/console/list/spec.js';
import { memberOf } from '../../identity/support.js';
import { consoleFixture } from '../support.js';
import { capture, copyLeads, endpointWithDeliveries, viewAs } from './support.js';
import { deliveryLog } from '../../../src/console/list/lists/deliveries.js';

type Fixture = Awaited<ReturnType<typeof consoleFixture>>;

/** Every id of a list's order in one read: what paging must give, page by page. */
async function wholeOrder<Row>(f: Fixture, spec: ListSpec<Row>, query: Query): Promise<string[]> {
  const view = viewAs(f.ws.workspace, 'owner');
  const { params, where, errors } = readQuery(spec, { view, zone: 'UTC', now: f.app.services.now() }, query);
  if (Object.keys(errors).length) throw new Error(`the query is refused: ${JSON.stringify(errors)}`);
  const ids: string[] = [];
  for await (const batch of eachBatch(f.app.pool, spec, where, params, 100_000)) ids.push(...batch.map(spec.rowId));
  return ids;
}

/** Pages forwards to the end, then backwards to the start, checking each page's neighbours. */
async function pageThrough<Row>(t: Test, f: Fixture, spec: ListSpec<Row>, query: Query, size: number) {
  const view = viewAs(f.ws.workspace, 'owner');
  const ctx = { view, zone: 'UTC', now: f.app.services.now() };
  const { params, where } = readQuery(spec, ctx, { ...query, size: String(size) });
  const forwards: string[] = [];
  let page = await readPage(f.app.pool, spec, where, params);
  t.notOk(page.hasPrevious, 'the first page has none before it');
  forwards.push(...page.rows.map(spec.rowId));
  while (page.hasNext) {
    page = await readPage(f.app.pool, spec, where, { ...params, bound: { side: 'after', ...page.last! } });
    t.ok(page.hasPrevious || page.rows.length === 0, 'a page after another has one before it');
    t.ok(page.rows.length <= size);
    forwards.push(...page.rows.map(spec.rowId));
  }
  const backwards: string[] = [...page.rows.map(spec.rowId)].reverse();
  while (page.hasPrevious) {
    page = await readPage(f.app.pool, spec, where, { ...params, bound: { side: 'before', ...page.first! } });
    t.ok(page.hasNext, 'a page before another has one after it');
    backwards.push(...[...page.rows.map(spec.rowId)].reverse());
  }
  const count = await countMatching(f.app.pool, spec, where);
  return { forwards, backwards: backwards.reverse(), count };
}

const sortable = <Row>(spec: ListSpec<Row>) => spec.columns.filter((c) => c.sort).map((c) => c.key);

t.test(
  'every list: each sortable column, both ways, pages through its whole order once, forwards and back',
  async (t) => {
    const f = await consoleFixture(t);
    const ws = f.ws.workspace;
    const ids: string[] = [];
    for (const [i, name] of ['Priya Raman', 'Arjun Mehta', 'Kavya Iyer', 'Rohan Das'].entries())
      ids.push(await capture(f.app, f.ws.live, { full_name: name, phone: `+91981234500${i}`, country_interest: 'CA' }));
    await copyLeads(f.app, ids[0]!, 57);
    const owner = ws.settings.users.find((u) => u.email === memberOf('owner'))!;
    const context = (now: Date) =>
      staffContext(ws.id, false, { type: 'user', user_id: owner.id, email: owner.email, name: owner.name }, now);
    for (const id of ids.slice(0, 3))
      await convertLeadToApplication(f.app.services, context(f.app.services.now()), ws, id);
    for (let i = 0; i < 31; i += 1)
      await createTask(f.app.services.store, context(f.app.services.now()), {
        subject: { lead_id: ids[3]!, application_id: null },
        title: `Call ${i % 4}`,
        assignee: i % 3 === 0 ? null : { user_id: owner.id, email: owner.email, name: owner.name },
        due_at: new Date(Date.UTC(2026, 11, 1 + (i % 5))),
      });
    const staff = f.client();
    await staff.signIn(memberOf('manager'));
    for (const quantity of ['1', '2', '2'])
      t.equal(
        (
          await staff.post(`/console/w/${ws.slug}/invoices`, {
            lead_id: ids[3]!,
            currency: 'INR',
            description: 'Counselling package',
            quantity,
            unit_amount: '7,500',
            tax_percent: '18',
            due_date: '2026-12-15',
          })
        ).status,
        303,
      );

    const lists: [ListSpec<never>, Query, number][] = [
      [LEADS as ListSpec<never>, {}, 61],
      [APPLICATIONS as ListSpec<never>, {}, 3],
      [TASKS as ListSpec<never>, { show: 'all' }, 31],
      [INVOICES as ListSpec<never>, {}, 3],
    ];
    for (const [spec, filter, total] of lists)
      for (const sort of sortable(spec))
        for (const dir of ['asc', 'desc'])
          for (const size of spec === LEADS ? [25, 50] : [25]) {
            const query = { ...filter, sort, dir };
            const whole = await wholeOrder(f, spec, query);
            const paged = await pageThrough(t, f, spec, query, size);
            t.equal(whole.length, total, `${spec.name} by ${sort} ${dir}: every row`);
            t.same(paged.forwards, whole, `${spec.name} by ${sort} ${dir}, ${size} a page: forwards, each once`);
            t.same(paged.backwards, whole, `${spec.name} by ${sort} ${dir}, ${size} a page: backwards, each once`);
            t.same(paged.count, { n: total, exact: true }, `${spec.name}: the count is exact`);
          }
    // The order itself, where the values say it: names, creation, amounts.
    const byName = await wholeOrder(f, LEADS, { sort: 'name', dir: 'asc', q: '+9198123450' });
    t.same(byName, [ids[1], ids[2], ids[0], ids[3]], 'Arjun, Kavya, Priya, Rohan: by name, up (a search by phone)');
    const tasksByDue = await wholeOrder(f, TASKS, { show: 'all', sort: 'due', dir: 'desc', size: '200' });
    const due = await f.app.pool.query<{ id: string; due_at: Date }>(
      'SELECT id, due_at FROM tasks WHERE tenant_id = $1',
      [ws.id],
    );
    const dueOf = new Map(due.rows.map((r) => [r.id, r.due_at.getTime()]));
    t.ok(
      tasksByDue.every((id, i) => i === 0 || dueOf.get(tasksByDue[i - 1]!)! >= dueOf.get(id)!),
      'tasks by due time, latest first',
    );
  },
);

t.test(
  'the delivery log: each sortable column, both ways, pages its whole order once; the endpoint its bound',
  async (t) => {
    const f = await consoleFixture(t, { config: { webhookAllowLoopback: true } });
    const endpoint = await endpointWithDeliveries(f.app, f.ws, 61);
    await endpointWithDeliveries(f.app, f.ws, 5); // another endpoint's rows are not this log's
    const spec = deliveryLog({ id: endpoint, deleted: false }) as ListSpec<never>;
    for (const sort of sortable(spec))
      for (const dir of ['asc', 'desc']) {
        const query = { sort, dir };
        const whole = await wholeOrder(f, spec, query);
        const paged = await pageThrough(t, f, spec, query, 25);
        t.equal(whole.length, 61, `deliveries by ${sort} ${dir}: every row`);
        t.same(paged.forwards, whole, `deliveries by ${sort} ${dir}: forwards, each once`);
        t.same(paged.backwards, whole, `deliveries by ${sort} ${dir}: backwards, each once`);
        t.same(paged.count, { n: 61, exact: true }, 'the count is exact');
      }
    const attempts = await f.app.pool.query<{ id: string; attempts: number }>(
      'SELECT id, attempts FROM webhook_deliveries WHERE endpoint_id = $1',
      [endpoint],
    );
    const of = new Map(attempts.rows.map((r) => [r.id, r.attempts]));
    const byAttempts = await wholeOrder(f, spec, { sort: 'attempts', dir: 'desc' });
    t.ok(
      byAttempts.every((id, i) => i === 0 || of.get(byAttempts[i - 1]!)! >= of.get(id)!),
      'most attempts first',
    );
    t.same(
      (await wholeOrder(f, spec, { state: 'queued' })).length,
      attempts.rows.filter((r) => r.attempts === 0).length,
      'the state filter: the same partition as the rows',
    );
  },
);

t.test('a list page: sort links with their state, a page size, previous and next, refusals in words', async (t) => {
  const f = await consoleFixture(t);
  const first = await capture(f.app, f.ws.live, { full_name: 'Zoya Mirza', phone: '+919811199900' });
  await copyLeads(f.app, first, 129);
  const c = f.client();
  await c.signIn(memberOf('counsellor'));
  const base = `/console/w/${f.ws.workspace.slug}/leads`;
  const rows = (text: string) => (text.match(/<tr>\s*<td>/g) ?? []).length;
  const page = await c.get(base);
  t.equal(page.status, 200);
  t.match(page.text, /130 leads; 50 on this page/, 'the count, exact, and the page');
  t.match(page.text, /aria-sort="descending"[^]*?Changed/, 'the default sort said');
  t.match(page.text, `href="${base}?sort=name&amp;dir=asc"`, 'a heading sorts by its column');
  for (const size of [25, 50, 100, 200]) {
    const sized = await c.get(`${base}?size=${size}`);
    t.equal(rows(sized.text), Math.min(size, 130), `${size} rows a page`);
  }
  t.equal((await c.get(`${base}?size=7`)).status, 400, 'a size not offered is refused');
  t.match((await c.get(`${base}?sort=body`)).text, 'This list cannot be sorted that way.');
  t.match((await c.get(`${base}?after=bm90IGEgcGxhY2U`)).text, 'This page link is not valid any more');
  const next = /href="([^"]+)" rel="next"/.exec(page.text)![1]!.replaceAll('&amp;', '&');
  const second = await c.get(next);
  t.equal(rows(second.text), 50);
  t.match(second.text, 'rel="prev"', 'the second page links back');
  const prev = /href="([^"]+)" rel="prev"/.exec(second.text)![1]!.replaceAll('&amp;', '&');
  const again = await c.get(prev);
  const names = (text: string) => [...text.matchAll(/leads\/([0-9a-f-]{36})"/g)].map((m) => m[1]);
  t.same(names(again.text), names(page.text), 'previous from the second page is the first page');
  const filtered = await c.get(`${base}?stage=contacted&sort=name&dir=asc`);
  t.match(filtered.text, /\d+ leads/);
  t.match(
    /href="([^"]+)" rel="next"/.exec(filtered.text)?.[1] ?? 'stage=contacted',
    'stage=contacted',
    'links keep the filter',
  );
});

t.test('above 10,000 matching rows the count is the planner’s estimate, said as one', async (t) => {
  const f = await consoleFixture(t);
  const first = await capture(f.app, f.ws.live, { full_name: 'Many Copies', phone: '+919811100000' });
  await copyLeads(f.app, first, EXACT_COUNT_LIMIT + 500);
  await f.app.pool.query('ANALYZE leads');
  const view = viewAs(f.ws.workspace, 'viewer');
  const { where } = readQuery(LEADS, { view, zone: 'UTC', now: new Date() }, {});
  const count = await countMatching(f.app.pool, LEADS, where);
  t.equal(count.exact, false, 'an estimate');
  t.ok(count.n > EXACT_COUNT_LIMIT, `about ${count.n}: never below the bound it passed`);
  const fewer = readQuery(LEADS, { view, zone: 'UTC', now: new Date() }, { q: 'many copies' });
  t.same(
    await countMatching(f.app.pool, LEADS, fewer.where),
    { n: 1, exact: true },
    'a narrower filter counts exactly',
  );
  const c = f.client();
  await c.signIn(memberOf('viewer'));
  const page = await c.get(`/console/w/${f.ws.workspace.slug}/leads`);
  t.match(page.text, /about [\d,]+ leads \(an estimate: over 10,000 match\)/);
});
