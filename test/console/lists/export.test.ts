import t from 'tap';
import { parse } from 'csv-parse/sync';
import { eraseLead } from '../../../src/commands/leads/erase-lead.js';
import { staffContext } from '../../../src/commands/run-command.js';
import { formulaRisk, neutralised, readBack } from '../../../src/shared/formula-cells.js';
import { seedWorkspace } from '../../support/app.js';
import { checkProposed, importEnded, startJobWorker, uploadCsv } from '../import-support.js';
import { ROLES, can } from '../../../src/identity/permissions.js';
import { everyRole, memberOf } from '../../identity/support.js';
import { consoleFixture } from '../support.js';
import { capture, copyLeads } from './support.js';

const rowsOf = (text: string): string[][] => parse(text.replace(/^\uFEFF/, ''), { relaxColumnCount: false });

t.test('formula-looking cells open as text; phones and signed numbers stay data, both ways', async (t) => {
  for (const cell of ['=1+1', '-2+3', '+cmd|x', '@SUM(A1)', '\t=1', '\r=1', '+', '-A1', "=cmd|' /C calc'!A0"]) {
    t.ok(formulaRisk(cell), `${JSON.stringify(cell)}: a formula risk`);
    t.equal(neutralised(cell), `'${cell}`, `${JSON.stringify(cell)}: neutralised`);
    t.equal(readBack(neutralised(cell)), cell, `${JSON.stringify(cell)}: read back as written`);
  }
  for (const cell of ['Priya', '', '1+1', 'a=b', '+919812345678', '+91 98765 43210', '-3.5', '+1 (555) 010-0000']) {
    t.notOk(formulaRisk(cell), `${JSON.stringify(cell)}: data`);
    t.equal(neutralised(cell), cell, `${JSON.stringify(cell)}: written as it is`);
    t.equal(readBack(cell), cell, `${JSON.stringify(cell)}: read as it is`);
  }
  t.equal(readBack("'Asha"), "'Asha", 'an apostrophe before data is the data');
});

t.test('an exported lead list imports back with the same phones; a formula cell is marked, never run', async (t) => {
  const f = await consoleFixture(t);
  const phones = ['+919812345678', '+14155552671', '+442071838750'];
  for (const [i, phone] of phones.entries())
    await capture(f.app, f.ws.live, { full_name: `Round Trip ${i}`, phone, email: `trip${i}@example.com` });
  const formula = await capture(f.app, f.ws.live, { full_name: 'Formula Person', phone: '+919800000002' });
  // A formula without a web address: capture refuses a name holding one as spam, which is not what this tests.
  await f.app.pool.query(
    `UPDATE leads SET body = (jsonb_set(body::jsonb, '{full_name}', '"=AVERAGE(1,2)"'))::json WHERE id = $1`,
    [formula],
  );
  const manager = f.client();
  await manager.signIn(memberOf('manager'));
  const file = await manager.get(`/console/w/${f.ws.workspace.slug}/leads/export.csv?sort=name&dir=asc`);
  const rows = rowsOf(file.text);
  t.same(
    rows.slice(1).map((r) => r[1]),
    ['+919800000002', ...phones],
    'each phone written as it is: data, not a formula',
  );
  t.equal(rows[1]![0], `'=AVERAGE(1,2)`, 'the formula neutralised');

  // The same file into another workspace of the same members: the import's preview, then the import itself.
  const other = await seedWorkspace(f.app, everyRole());
  const slug = other.workspace.slug;
  const uploaded = await uploadCsv(manager, slug, Buffer.from(file.text, 'utf8'), 'leads-export.csv');
  t.equal(uploaded.status, 303, uploaded.text);
  const importPath = uploaded.location!;
  const checked = await checkProposed(manager, importPath);
  t.equal(checked.status, 303);
  const preview = (await manager.get(checked.headers.get('location')!)).text;
  t.match(preview, '4 rows read');
  t.match(preview, '4 rows pass the API', 'every phone read back as a phone');
  t.match(preview, /1 rows? ha(s|ve) a cell that starts like a spreadsheet formula/, 'only the formula is marked');
  startJobWorker(t, f.app);
  t.equal((await manager.post(`${importPath}/start`, {})).status, 303);
  t.match(await importEnded(manager, importPath), '4 imported');
  const imported = await f.app.pool.query<{ name: string; phone: string }>(
    `SELECT body->>'full_name' AS name, phone FROM leads WHERE tenant_id = $1 ORDER BY phone`,
    [other.workspace.id],
  );
  t.same(
    imported.rows.map((r) => r.phone),
    ['+14155552671', '+442071838750', '+919800000002', '+919812345678'],
    'the same phones',
  );
  t.ok(
    imported.rows.some((r) => r.name === '=AVERAGE(1,2)'),
    'the formula name kept as the text it was, the export’s apostrophe read back',
  );
});

t.test(
  'a CSV export: labels as shown, the zone, no formula, no erased person, recorded in the audit trail',
  async (t) => {
    const f = await consoleFixture(t);
    const ws = f.ws.workspace;
    const priya = await capture(f.app, f.ws.live, { full_name: 'Priya Raman', phone: '+919812345678' });
    const erased = await capture(f.app, f.ws.live, { full_name: 'Erased Person', phone: '+919800000001' });
    const formula = await capture(f.app, f.ws.live, { full_name: 'Formula Person', phone: '+919800000002' });
    // A name a spreadsheet would run, written into the read model as it could come from any import.
    await f.app.pool.query(
      `UPDATE leads SET body = (jsonb_set(body::jsonb, '{full_name}', '"=HYPERLINK(\\"http://x.example\\")"'))::json WHERE id = $1`,
      [formula],
    );
    const owner = ws.settings.users.find((u) => u.email === memberOf('owner'))!;
    await eraseLead(f.app.services, {
      tenantId: ws.id,
      sandbox: false,
      leadId: erased,
      context: (now) =>
        staffContext(ws.id, false, { type: 'user', user_id: owner.id, email: owner.email, name: owner.name }, now),
    });
    const admin = f.client();
    await admin.signIn(memberOf('admin'));
    t.equal(
      (await admin.post(`/console/w/${ws.slug}/settings`, { time_zone: 'Asia/Kolkata' })).status,
      303,
      'the zone is set',
    );
    const manager = f.client();
    await manager.signIn(memberOf('manager'));
    const file = await manager.get(`/console/w/${ws.slug}/leads/export.csv?sort=name&dir=asc&q=%2B9198000000`);
    t.equal(file.status, 200);
    t.match(file.headers.get('content-type'), /^text\/csv; charset=utf-8/);
    t.match(file.headers.get('content-disposition'), /attachment; filename="leads-ws-[0-9a-f]+-\d{4}-\d\d-\d\d\.csv"/);
    const rows = rowsOf(file.text);
    t.same(rows[0], [
      'Name',
      'Phone',
      'Email',
      'Stage',
      'Owner',
      'Branch',
      'Created (Asia/Kolkata)',
      'Changed (Asia/Kolkata)',
    ]);
    t.equal(rows.length, 2, 'the search by phone finds one: the erased person has no phone any more');
    t.equal(rows[1]![0], `'=HYPERLINK("http://x.example")`, 'the formula opens as text');
    t.equal(rows[1]![1], '+919800000002', 'a phone starting with + is data: written as it is');
    t.equal(rows[1]![3], 'New', 'the stage by its name');
    t.notMatch(file.text, 'Erased Person');
    const all = rowsOf((await manager.get(`/console/w/${ws.slug}/leads/export.csv`)).text);
    t.notOk(
      all.some((r) => r.includes('+919800000001')),
      'nor in the whole list',
    );
    const created = await f.app.pool.query<{ created_at: Date }>('SELECT created_at FROM leads WHERE id = $1', [priya]);
    const wall = new Intl.DateTimeFormat('en-CA', {
      timeZone: 'Asia/Kolkata',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    })
      .format(created.rows[0]!.created_at)
      .replace(', ', ' ');
    t.ok(
      all.some((r) => r[0] === 'Priya Raman' && r[6] === wall),
      `Priya's creation in Kolkata's time: ${wall}`,
    );

    const events = await f.app.pool.query<{ data: Record<string, unknown>; actor: Record<string, unknown> }>(
      `SELECT data, metadata->'actor' AS actor FROM events WHERE tenant_id = $1 AND type = 'list.exported' ORDER BY position`,
      [ws.id],
    );
    t.equal(events.rows.length, 2, 'each file is an event of the audit trail');
    t.same(events.rows[0]!.data, {
      list: 'leads',
      filter: 'q=%28search%29&sort=name&dir=asc',
      scope: 'filter',
      count: 1,
    });
    t.match(events.rows[0]!.actor, { type: 'user', email: memberOf('manager') }, 'by the member');

    // A selection: the ticked rows only.
    const picked = await manager.post(`/console/w/${ws.slug}/leads/export`, { ids: [priya], scope: 'ids', query: '' });
    t.equal(picked.status, 200);
    t.same(
      rowsOf(picked.text).map((r) => r[0]),
      ['Name', 'Priya Raman'],
    );
    const none = await manager.post(`/console/w/${ws.slug}/leads/export`, { scope: 'ids', query: '' });
    t.equal(none.status, 400, 'nothing ticked: said, nothing sent');
  },
);

t.test('the export is a permission of its own, for each role and each list', async (t) => {
  const f = await consoleFixture(t);
  await capture(f.app, f.ws.live, { full_name: 'Priya Raman', phone: '+919812345678' });
  for (const role of ROLES) {
    const c = f.client();
    await c.signIn(memberOf(role));
    for (const list of ['leads', 'applications', 'tasks', 'invoices']) {
      const file = await c.get(
        `/console/w/${f.ws.workspace.slug}/${list}/export.csv${list === 'tasks' ? '?show=all' : ''}`,
      );
      t.equal(file.status, can(role, 'lists.export') ? 200 : 403, `${role}: ${list}`);
    }
    const page = await c.get(`/console/w/${f.ws.workspace.slug}/leads`);
    t.equal(page.text.includes('export.csv'), can(role, 'lists.export'), `${role}: the link only when allowed`);
    t.equal(
      page.text.includes('name="ids"'),
      can(role, 'lists.export') || can(role, 'leads.change'),
      `${role}: selection`,
    );
  }
  const other = await consoleFixture(t);
  const stranger = other.client();
  await stranger.signIn(memberOf('owner'));
  const elsewhere = await stranger.get(`/console/w/${f.ws.workspace.slug}/leads/export.csv`);
  t.not(elsewhere.status, 200, 'another workspace’s owner gets nothing');
});

t.test('a large export is streamed: batches read as the client reads, memory bounded', async (t) => {
  const f = await consoleFixture(t);
  const first = await capture(f.app, f.ws.live, { full_name: 'Many Copies', phone: '+919811100000' });
  await copyLeads(f.app, first, 20_000);
  const c = f.client();
  await c.signIn(memberOf('owner'));
  let batches = 0;
  const pool = f.app.pool as unknown as { query: (...a: unknown[]) => Promise<unknown> };
  const query = pool.query.bind(pool);
  pool.query = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && args[0].includes('list_sort_value')) batches += 1;
    return query(...args);
  };
  t.teardown(() => {
    pool.query = query;
  });
  const response = await fetch(`${f.app.baseUrl}/console/w/${f.ws.workspace.slug}/leads/export.csv`, {
    headers: { cookie: c.cookie! },
  });
  t.equal(response.status, 200);
  const reader = response.body!.getReader();
  await reader.read();
  await new Promise((resolve) => setTimeout(resolve, 300));
  const whilePaused = batches;
  t.ok(whilePaused < 20, `${whilePaused} batch(es) of 500 read while the client reads nothing: not the whole list`);
  let bytes = 0;
  let peak = 0;
  const base = process.memoryUsage().heapUsed;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.length;
    peak = Math.max(peak, process.memoryUsage().heapUsed - base);
  }
  t.ok(batches >= 40, `${batches} batches for 20,001 rows`);
  t.ok(bytes > 1_000_000, `${bytes} bytes sent`);
  t.comment(`heap above the start while streaming: at most ${(peak / 1e6).toFixed(1)} MB (busy machine)`);
  t.ok(peak < 64e6, 'the heap never holds the whole list');
});
