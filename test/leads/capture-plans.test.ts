import t from 'tap';
import { freshDatabase, serverUrl } from '../support/db.js';
import { seedWorkspace, startApp } from '../support/app.js';

/*
 * A lead capture's statements are prepared by name on each connection (src/storage/transaction.ts), so PostgreSQL
 * plans them once and runs a generic plan after its first five custom ones, unless the custom plans look cheaper. A
 * statement whose estimate follows one of its values (the length of an array, say) can keep looking cheaper and is
 * planned again at every run: the members-who-can-sign-in check was, 85 µs of each capture (docs/benchmarks.md). One
 * connection, so every capture runs on the session whose prepared statements the test then reads.
 */
t.test("a lead capture's prepared statements are planned once per connection, not at every run", async (t) => {
  const database = await freshDatabase(t, serverUrl(), 1);
  const app = await startApp(t, { database });
  const seeded = await seedWorkspace(app);
  const runs = 8;
  for (let i = 0; i < runs; i++) {
    const response = await app.request('/v1/leads', {
      method: 'POST',
      key: seeded.live,
      headers: { 'idempotency-key': `capture-plans-${i}` },
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
  const { rows } = await app.pool.query<{ statement: string; generic_plans: string; custom_plans: string }>(
    `SELECT statement, generic_plans::text, custom_plans::text FROM pg_prepared_statements
      WHERE generic_plans + custom_plans >= $1 ORDER BY name`,
    [runs],
  );
  t.ok(rows.length >= 5, `the captures' statements are prepared (${rows.length} run ${runs} times or more)`);
  for (const row of rows) {
    const text = row.statement.replace(/\s+/g, ' ').slice(0, 90);
    t.ok(
      Number(row.generic_plans) > 0 && Number(row.custom_plans) <= 5,
      `${text}: its generic plan after five custom ones (custom ${row.custom_plans}, generic ${row.generic_plans})`,
    );
  }
});
