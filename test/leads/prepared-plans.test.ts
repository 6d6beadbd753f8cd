import t from 'tap';
import { freshDatabase, serverUrl } from '../support/db.js';
import { seedWorkspace, startApp } from '../support/app.js';

/*
 * The statements of a lead capture and of a page of GET /v1/leads are prepared by name on each connection
 * (src/storage/transaction.ts, onOneConnection), so PostgreSQL plans each once and runs its generic plan after its
 * first five custom ones, unless the custom plans look cheaper. A statement whose estimate follows one of its values
 * (the length of an array, a page's LIMIT, a workspace's share of the rows) can keep looking cheaper and is planned
 * again at every run: the members-who-can-sign-in check was (85 µs of each capture), and so was a page (a third of its
 * time in PostgreSQL; docs/benchmarks.md). One connection, so every request runs on the session whose prepared
 * statements the test then reads.
 */
const RUNS = 8;

t.test('lead captures and pages of leads run their prepared statements on generic plans', async (t) => {
  const database = await freshDatabase(t, serverUrl(), 1);
  const app = await startApp(t, { database });
  const seeded = await seedWorkspace(app);
  for (let i = 0; i < RUNS; i++) {
    const response = await app.request('/v1/leads', {
      method: 'POST',
      key: seeded.live,
      headers: { 'idempotency-key': `prepared-plans-${i}` },
      json: {
        full_name: `Planned Person ${i}`,
        email: `planned.${i}@example.com`,
        phone: `+1415555${String(1000 + i)}`,
        visa_type: 'student',
        country_interest: 'CA',
        consent: true,
      },
    });
    t.equal(response.status, 201, `capture ${i + 1}`);
  }
  const first = (await (await app.request('/v1/leads?limit=2', { key: seeded.live })).json()) as {
    next_cursor: string;
  };
  const since = encodeURIComponent('2020-01-01T00:00:00.000Z');
  const pages = [
    '/v1/leads',
    `/v1/leads?updated_since=${since}`,
    `/v1/leads?limit=3&cursor=${first.next_cursor}`,
    `/v1/leads?limit=3&updated_since=${since}&cursor=${first.next_cursor}`,
  ];
  for (const page of pages) {
    const sizes = new Set<number>();
    for (let i = 0; i < RUNS; i++) {
      const response = await app.request(page, { key: seeded.live });
      t.equal(response.status, 200, `${page}, page ${i + 1}`);
      sizes.add(((await response.json()) as { data: unknown[] }).data.length);
    }
    t.same([...sizes], [page.includes('cursor') ? 3 : RUNS], `${page}: the same page every time`);
  }
  const { rows } = await app.pool.query<{ statement: string; generic_plans: string; custom_plans: string }>(
    `SELECT statement, generic_plans::text, custom_plans::text FROM pg_prepared_statements
      WHERE generic_plans + custom_plans >= $1 ORDER BY name`,
    [RUNS],
  );
  const run = (pattern: RegExp) => rows.filter((row) => pattern.test(row.statement)).length;
  t.ok(run(/INSERT INTO leads/) === 1 && run(/staff_accounts/) === 1, "the capture's statements are prepared");
  t.equal(run(/string_agg\(p\.body::text/), pages.length, 'one statement for each kind of page');
  t.equal(run(/pg_advisory_xact_lock_shared/), 1, "the pages' wait for lead writes");
  for (const row of rows) {
    const text = row.statement.replace(/\s+/g, ' ').slice(0, 90);
    t.ok(
      Number(row.generic_plans) > 0 && Number(row.custom_plans) <= 5,
      `${text}: its generic plan after five custom ones (custom ${row.custom_plans}, generic ${row.generic_plans})`,
    );
  }
});
