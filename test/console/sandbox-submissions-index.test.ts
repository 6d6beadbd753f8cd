import t from 'tap';
import { sandboxSubmissions } from '../../src/projections/leads-queries.js';
import { hashKey } from '../../src/keys/api-key.js';
import { recordSql } from '../support/sql-recorder.js';
import { consoleFixture } from './support.js';

t.test("a test key's sandbox submissions are read through the index on the acting key", async (t) => {
  const f = await consoleFixture(t);
  for (const name of ['Meera Nair', 'Rohan Das'])
    t.equal(
      (
        await f.app.request('/v1/leads', {
          key: f.ws.test,
          method: 'POST',
          json: { full_name: name, email: `${name.replace(' ', '.').toLowerCase()}@example.org`, consent: true },
        })
      ).status,
      201,
    );
  const keyId = (
    await f.app.pool.query<{ id: string }>('SELECT id FROM api_keys WHERE hash = $1', [hashKey(f.ws.test)])
  ).rows[0]!.id;

  // The statement exactly as sandboxSubmissions sends it, explained with its own values.
  const sent = recordSql(t);
  const submissions = await sandboxSubmissions(f.app.pool, f.app.services.personalData, f.ws.workspace.id, keyId);
  t.same(submissions.map((s) => s.full_name).sort(), ['Meera Nair', 'Rohan Das']);
  const statement = sent.find((s) => /FROM events/.test(s.text))!;

  const client = await f.app.pool.connect();
  t.teardown(() => client.release());
  await client.query('BEGIN');
  // Two leads make a sequential scan cheapest; the question is whether the index can answer the query at all.
  await client.query('SET LOCAL enable_seqscan = off');
  const plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${statement.text}`, statement.values);
  await client.query('ROLLBACK');
  t.match(
    plan.rows.map((r) => r['QUERY PLAN']).join('\n'),
    /events_sandbox_submissions_by_key/,
    'the plan reads the index on the acting key',
  );
});
