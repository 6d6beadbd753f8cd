import t, { type Test } from 'tap';
import { memberOf } from '../identity/support.js';
import { leadStageCounts } from '../../src/console/board/leads-query.js';
import type { Queryable } from '../../src/storage/postgres.js';
import { seedWorkspace } from '../support/app.js';
import { consoleFixture } from './support.js';

type Fixture = Awaited<ReturnType<typeof consoleFixture>>;

async function capture(t: Test, f: Fixture, lead: Record<string, unknown>): Promise<string> {
  const response = await f.app.request('/v1/leads', {
    method: 'POST',
    key: f.ws.live,
    json: { consent: true, ...lead },
  });
  t.equal(response.status, 201, `captured ${String(lead.full_name)}`);
  return ((await response.json()) as { id: string }).id;
}

async function patch(t: Test, f: Fixture, id: string, json: Record<string, unknown>): Promise<void> {
  const response = await f.app.request(`/v1/leads/${id}`, { method: 'PATCH', key: f.ws.live, json });
  t.equal(response.status, 200, `changed ${JSON.stringify(json)}`);
}

/** The markup of one column of a board page. */
function column(page: string, stage: string): string {
  const start = page.indexOf(`<section class="board-column" data-stage="${stage}"`);
  if (start < 0) return '';
  return page.slice(start, page.indexOf('</section>', start));
}

/** The count a column's heading shows. */
const countOf = (page: string, stage: string) =>
  Number(/class="column-count"\s*>([\d,]+)/.exec(column(page, stage))?.[1]?.replace(/,/g, '') ?? NaN);

/** The markup of one card (by its record's id). */
function card(page: string, id: string): string {
  const start = page.indexOf(`data-id="${id}"`);
  return start < 0 ? '' : page.slice(start, page.indexOf('</article>', start));
}

t.test('the lead board: a column per stage with its count and cards, filtered as the list', async (t) => {
  const f = await consoleFixture(t);
  const priya = await capture(t, f, {
    full_name: 'Priya Raman',
    phone: '+919812345678',
    visa_type: 'student',
    country_interest: 'CA',
  });
  const arjun = await capture(t, f, {
    full_name: 'Arjun Mehta',
    phone: '+919800011122',
    visa_type: 'work',
    country_interest: 'AU',
  });
  const meera = await capture(t, f, {
    full_name: 'Meera Nair',
    phone: '+919800011133',
    visa_type: 'work',
    country_interest: 'CA',
  });
  const ravi = await capture(t, f, {
    full_name: 'Ravi Kumar',
    phone: '+919800011144',
    visa_type: 'pr',
    country_interest: 'GB',
  });
  await patch(t, f, arjun, { stage_key: 'contacted', owner_email: memberOf('counsellor') });
  await patch(t, f, meera, { stage_key: 'contacted', owner_email: null, next_follow_up_at: '2030-01-15T04:30:00Z' });
  await patch(t, f, ravi, { stage_key: 'lost', lost_reason_key: 'not_eligible' });
  const c = f.client();
  await c.signIn(memberOf('viewer'));
  const base = `/console/w/${f.ws.workspace.slug}/leads/board`;
  const board = await c.get(base);
  t.equal(board.status, 200);
  t.same(
    ['new', 'contacted', 'qualified', 'counselling', 'lost'].map((s) => countOf(board.text, s)),
    [1, 2, 0, 0, 1],
    'every stage of the pipeline, in order, with its count',
  );
  t.match(column(board.text, 'new'), 'Priya Raman');
  t.match(column(board.text, 'contacted'), 'Arjun Mehta');
  t.match(column(board.text, 'contacted'), 'Meera Nair');
  t.match(column(board.text, 'lost'), 'Ravi Kumar');
  // The follow-up in the workspace's zone (the demo workspace keeps UTC unless set) and the owner on the card.
  t.match(card(board.text, meera), /Follow-up<\/dt>\s*<dd>\s*<time datetime="2030-01-15T04:30:00.000Z"/);
  t.match(card(board.text, arjun), /Owner<\/dt>\s*<dd>The counsellor<\/dd>/);
  t.match(card(board.text, priya), /In stage<\/dt>\s*<dd>under an hour<\/dd>/);
  t.notMatch(board.text, 'form method="post" action="' + base, 'a viewer sees no move controls');
  t.notMatch(board.text, 'board.js', 'nor the script that moves cards');
  t.notMatch(board.text, 'draggable');

  const work = await c.get(`${base}?visa_type=work`);
  t.same(
    [countOf(work.text, 'new'), countOf(work.text, 'contacted'), countOf(work.text, 'lost')],
    [0, 2, 0],
    'visa type',
  );
  const canada = await c.get(`${base}?country=CA`);
  t.same([countOf(canada.text, 'new'), countOf(canada.text, 'contacted')], [1, 1], 'country');
  t.notMatch(canada.text, 'Arjun Mehta');
  const counsellor = f.ws.workspace.settings.users.find((u) => u.email === memberOf('counsellor'))!;
  const mine = await c.get(`${base}?owner=${counsellor.id}`);
  t.equal(countOf(mine.text, 'contacted'), 1, 'owner');
  t.match(column(mine.text, 'contacted'), 'Arjun Mehta');
  const nobody = await c.get(`${base}?owner=none`);
  t.equal(countOf(nobody.text, 'contacted'), 1, 'no owner');
  t.match(column(nobody.text, 'contacted'), 'Meera Nair');
  const blr = f.ws.workspace.settings.branches.find((b) => b.code === 'BLR')!;
  t.equal(countOf((await c.get(`${base}?branch=${blr.id}`)).text, 'contacted'), 0, 'branch');
  const del = f.ws.workspace.settings.branches.find((b) => b.code === 'DEL')!;
  const both = await c.get(`${base}?branch=${del.id}&visa_type=work&country=CA`);
  t.same([countOf(both.text, 'contacted'), countOf(both.text, 'new')], [1, 0], 'filters together');

  // The list reads the same filters: its rows are the column's.
  const list = await c.get(
    `/console/w/${f.ws.workspace.slug}/leads?stage=contacted&branch=${del.id}&country=CA&visa_type=work`,
  );
  t.equal(list.status, 200);
  t.match(list.text, 'Meera Nair');
  t.notMatch(list.text, 'Arjun Mehta');
  t.notMatch(list.text, 'Priya Raman');

  const wrong = await c.get(`${base}?visa_type=martian&owner=${'0'.repeat(8)}-0000-0000-0000-000000000000`);
  t.equal(wrong.status, 400);
  t.match(wrong.text, /id="f-visa_type-error">Choose a visa type from the list/);
  t.match(wrong.text, /id="f-owner-error">Choose an owner from the list/);
  t.equal(countOf(wrong.text, 'contacted'), 2, 'a filter not understood filters nothing');
});

t.test(
  'the lead board: a column shows its first 20 cards, the most recently changed first, and links the rest',
  async (t) => {
    const f = await consoleFixture(t);
    const ids: string[] = [];
    for (let i = 0; i < 23; i++)
      ids.push(
        await capture(t, f, {
          full_name: `Person ${String(i).padStart(2, '0')}`,
          phone: `+9198000${String(20_000 + i)}`,
          visa_type: 'student',
        }),
      );
    const c = f.client();
    await c.signIn(memberOf('manager'));
    const board = await c.get(`/console/w/${f.ws.workspace.slug}/leads/board?visa_type=student`);
    const shown = [...column(board.text, 'new').matchAll(/<article[^>]*data-id="([^"]+)"/g)].map((m) => m[1]);
    t.equal(countOf(board.text, 'new'), 23);
    t.same(shown, ids.slice(3).reverse(), 'the 20 most recently changed, newest first');
    t.match(
      column(board.text, 'new'),
      /href="\/console\/w\/[^/]+\/leads\?stage=new&amp;visa_type=student">All 23 in the list<\/a>\s*\(3 more\)/,
    );
  },
);

t.test('moving a lead by its card: done, refused with the reason on the card, refused by role', async (t) => {
  const f = await consoleFixture(t);
  const priya = await capture(t, f, { full_name: 'Priya Raman', phone: '+919812345678', visa_type: 'student' });
  const c = f.client();
  await c.signIn(memberOf('counsellor'));
  const base = `/console/w/${f.ws.workspace.slug}/leads/board`;
  const before = await c.get(`${base}?visa_type=student`);
  t.match(
    card(before.text, priya),
    /<select id="move-[^"]+" name="stage">\s*<option value="contacted">Contacted<\/option>/,
  );
  t.notMatch(card(before.text, priya), '<option value="new">', 'the stage it is in is not offered');
  t.match(before.text, '<script src="/console/assets/board.js" defer></script>');

  const moved = await c.post(`${base}/move`, { id: priya, stage: 'qualified', visa_type: 'student' });
  t.equal(moved.status, 303);
  t.equal(moved.headers.get('location'), `${base}?visa_type=student&moved=${priya}`, 'back to the same board');
  const after = await c.get(moved.headers.get('location')!);
  t.match(after.text, /role="status">Priya Raman moved to Qualified\.<\/p>/);
  t.match(column(after.text, 'qualified'), 'Priya Raman');
  t.equal(countOf(after.text, 'new'), 0);
  const history = await f.app.request(`/v1/leads/${priya}`, { key: f.ws.live });
  t.match(await history.json(), { stage: { key: 'qualified' } });
  const events = await f.app.pool.query<{ type: string; actor: { email: string } }>(
    `SELECT type, metadata->'actor' AS actor FROM events WHERE stream_id = $1 ORDER BY revision`,
    [`lead-${priya}`],
  );
  t.match(
    events.rows.at(-1),
    { type: 'lead.updated', actor: { email: memberOf('counsellor') } },
    'the member is the actor',
  );

  const lost = await c.post(`${base}/move`, { id: priya, stage: 'lost' });
  t.equal(lost.status, 400, 'the lost stage needs a reason, which a card does not hold');
  t.match(
    card(lost.text, priya),
    /class="error" id="card-[^"]+-error">Not moved: Choose a lost reason: a lead moves to the lost stage only with one\. Choose it on the lead’s page\./,
  );
  t.match(column(lost.text, 'qualified'), 'Priya Raman', 'the card stays where it was');
  t.match(lost.text, /role="alert">Not moved: Choose a lost reason/);

  const unknown = await c.post(`${base}/move`, { id: priya, stage: 'mars' });
  t.equal(unknown.status, 400);
  t.match(card(unknown.text, priya), /Not moved: The stage is not a stage of this workspace&#39;s pipeline\./);
  t.equal(
    (await c.post(`${base}/move`, { id: priya, stage: 'converted' })).status,
    409,
    'converted only by conversion',
  );

  const viewer = f.client();
  await viewer.signIn(memberOf('viewer'));
  const forbidden = await viewer.post(`${base}/move`, { id: priya, stage: 'new' });
  t.equal(forbidden.status, 403);
  t.match(forbidden.text, 'Your role (viewer) does not allow this');
  t.equal(
    (await c.post(`${base}/move`, { id: priya, stage: 'new' }, { csrf: false })).status,
    403,
    'no CSRF token, no move',
  );

  // Another workspace's lead is no card of this board.
  const other = await seedWorkspace(f.app, {
    users: [{ name: 'O', email: 'o@other.example', role: 'owner', branch: 'DEL' }],
  });
  const theirs = await f.app.request('/v1/leads', {
    method: 'POST',
    key: other.live,
    json: { consent: true, full_name: 'Not Yours', phone: '+919811100000' },
  });
  const theirId = ((await theirs.json()) as { id: string }).id;
  t.equal((await c.post(`${base}/move`, { id: theirId, stage: 'contacted' })).status, 404);
  const untouched = await f.app.request(`/v1/leads/${theirId}`, { key: other.live });
  t.match(await untouched.json(), { stage: { key: 'new' } });
});

t.test(
  'the applications board: cases by stage, a move by the card, a closed case refused with the reason',
  async (t) => {
    const f = await consoleFixture(t);
    const priya = await capture(t, f, {
      full_name: 'Priya Raman',
      phone: '+919812345678',
      visa_type: 'student',
      country_interest: 'CA',
    });
    const arjun = await capture(t, f, {
      full_name: 'Arjun Mehta',
      phone: '+919800011122',
      visa_type: 'work',
      country_interest: 'AU',
    });
    const admin = f.client();
    await admin.signIn(memberOf('admin'));
    const slug = f.ws.workspace.slug;
    const caseOf = async (leadId: string) => {
      const converted = await admin.post(`/console/w/${slug}/leads/${leadId}/convert`, { confirm: 'yes' });
      t.equal(converted.status, 303);
      return /applications\/([0-9a-f-]{36})/.exec(converted.headers.get('location')!)![1]!;
    };
    const first = await caseOf(priya);
    const second = await caseOf(arjun);
    const leads = await admin.get(`/console/w/${slug}/leads/board`);
    t.equal(countOf(leads.text, 'new'), 0, 'a converted lead is on the applications board, not the lead board');

    const base = `/console/w/${slug}/applications/board`;
    const board = await admin.get(base);
    t.equal(board.status, 200);
    t.same(
      ['profile', 'documents', 'submission', 'decision'].map((s) => countOf(board.text, s)),
      [2, 0, 0, 0],
    );
    t.match(card(board.text, first), 'Priya Raman');
    t.match(card(board.text, first), /In stage<\/dt>\s*<dd>under an hour<\/dd>/);
    t.equal(countOf((await admin.get(`${base}?country=AU`)).text, 'profile'), 1, 'filtered by the lead’s country');
    t.notMatch((await admin.get(`${base}?visa_type=work`)).text, 'Priya Raman', 'and visa type');
    const del = f.ws.workspace.settings.branches.find((b) => b.code === 'DEL')!;
    const listed = await admin.get(`/console/w/${slug}/applications?stage=profile&branch=${del.id}&visa_type=work`);
    t.equal(listed.status, 200, 'the applications list reads the board’s filters too');
    t.match(listed.text, 'Arjun Mehta');
    t.notMatch(listed.text, 'Priya Raman');

    const moved = await admin.post(`${base}/move`, { id: first, stage: 'documents' });
    t.equal(moved.status, 303);
    const after = await admin.get(moved.headers.get('location')!);
    t.match(column(after.text, 'documents'), 'Priya Raman');
    t.match(after.text, /moved to Documents\./);

    t.equal((await admin.post(`/console/w/${slug}/applications/${second}/status`, { status: 'closed' })).status, 303);
    const closed = await admin.post(`${base}/move`, { id: second, stage: 'submission' });
    t.equal(closed.status, 409);
    t.match(
      card(closed.text, second),
      /Not moved: This case is closed: set its status to active or on hold before changing it\./,
    );
    t.match(column(closed.text, 'profile'), 'Arjun Mehta', 'the card stays');
    t.match(card(closed.text, second), /Status<\/dt>\s*<dd><span class="badge badge-neutral">closed<\/span>/);

    const viewer = f.client();
    await viewer.signIn(memberOf('viewer'));
    const seen = await viewer.get(base);
    t.equal(seen.status, 200);
    t.notMatch(seen.text, 'name="stage"', 'a viewer sees no move controls');
    t.equal((await viewer.post(`${base}/move`, { id: first, stage: 'profile' })).status, 403);
  },
);

t.test('the counts read leads_board alone (an index-only scan)', async (t) => {
  const f = await consoleFixture(t);
  await capture(t, f, {
    full_name: 'Priya Raman',
    phone: '+919812345678',
    visa_type: 'student',
    country_interest: 'CA',
  });
  await f.app.pool.query('VACUUM ANALYZE leads, lead_order');
  const client = await f.app.pool.connect();
  try {
    await client.query('SET enable_seqscan = off');
    await client.query('SET enable_bitmapscan = off');
    // The board's own query, explained: the wrapper runs EXPLAIN of the text and values it is given.
    const plans: string[] = [];
    const explaining = {
      query: async (text: string, values?: unknown[]) => {
        const result = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values);
        plans.push(result.rows.map((r) => r['QUERY PLAN']).join('\n'));
        return { rows: [], rowCount: 0 };
      },
    } as unknown as Queryable;
    await leadStageCounts(explaining, f.ws.workspace.id, { visaType: 'student', country: 'CA' }, ['new']);
    await leadStageCounts(explaining, f.ws.workspace.id, {}, ['new']);
    t.equal(plans.length, 2);
    for (const plan of plans) t.match(plan, /Index Only Scan (Backward )?using leads_board/);
  } finally {
    client.release();
  }
});
