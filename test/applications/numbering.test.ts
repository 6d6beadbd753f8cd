import t from 'tap';
import type { AdminApplication } from '../../src/schemas/application.js';
import { seedWorkspace } from '../support/app.js';
import { appFixture, fixtureFor } from './support.js';

const CONVERSIONS = 30;

t.test('APP-<number>: no gaps or repeats under concurrent conversions, per workspace and mode', async (t) => {
  const f = await appFixture(t);
  const leads = await Promise.all(Array.from({ length: CONVERSIONS }, () => f.lead()));
  const sandboxLeads = await Promise.all(Array.from({ length: 5 }, () => f.lead(f.ws.test)));

  // One conversion fails on purpose among the concurrent ones (an already converted lead): it must not use a number.
  await f.convert(leads[0]!);
  const responses = await Promise.all([
    ...leads.slice(1).map((id) => f.admin(`/leads/${id}/convert`, { method: 'POST' })),
    f.admin(`/leads/${leads[0]}/convert`, { method: 'POST' }),
    ...sandboxLeads.map((id) => f.admin(`/leads/${id}/convert`, { method: 'POST', sandbox: true })),
  ]);
  const statuses = responses.map((r) => r.status);
  t.same(statuses.filter((s) => s === 201).length, CONVERSIONS - 1 + 5, 'every other conversion succeeded');
  t.same(
    statuses.filter((s) => s === 409),
    [409],
    'the repeated conversion is refused',
  );
  const views = (await Promise.all(
    responses.filter((r) => r.status === 201).map((r) => r.json()),
  )) as AdminApplication[];
  const live = views.filter((v) => !v.sandbox).map((v) => Number(v.case_ref.slice(4)));
  const sandbox = views.filter((v) => v.sandbox).map((v) => Number(v.case_ref.slice(4)));
  t.same(
    [1, ...live].sort((a, b) => a - b),
    Array.from({ length: CONVERSIONS }, (_, i) => i + 1),
    'live: 1..N, no gap, no repeat',
  );
  t.same(
    sandbox.sort((a, b) => a - b),
    [1, 2, 3, 4, 5],
    'sandbox numbers count on their own',
  );
  t.ok(views.every((v) => v.reference === v.case_ref && /^APP-\d+$/.test(v.case_ref)));

  // The same lead converted by many at once: one application only.
  const contested = await f.lead();
  const race = await Promise.all(
    Array.from({ length: 8 }, () => f.admin(`/leads/${contested}/convert`, { method: 'POST' })),
  );
  t.same(
    race.map((r) => r.status).sort(),
    [201, 409, 409, 409, 409, 409, 409, 409],
    'one conversion wins, the rest get 409',
  );
  t.match(
    await race.find((r) => r.status === 201)!.json(),
    { case_ref: `APP-${CONVERSIONS + 1}` },
    'and it takes the next number',
  );
  const rows = await f.app.pool.query('SELECT count(*)::int AS n FROM applications WHERE lead_id = $1', [contested]);
  t.equal(rows.rows[0].n, 1);

  // Another workspace starts at APP-1.
  const other = fixtureFor(f.app, await seedWorkspace(f.app));
  t.equal((await other.convert(await other.lead())).case_ref, 'APP-1');
});
