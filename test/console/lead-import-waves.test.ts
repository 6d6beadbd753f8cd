import { Writable } from 'node:stream';
import fc from 'fast-check';
import { pino } from 'pino';
import type pg from 'pg';
import t, { type Test } from 'tap';
import { memberOf, everyRole } from '../identity/support.js';
import { seedWorkspace } from '../support/app.js';
import { checkProperty } from '../support/properties.js';
import { consoleFixture, type ConsoleClient } from './support.js';
import { checkProposed, importEnded, uploadCsv } from './import-support.js';
import { JobWorker } from '../../src/subscribers/job-worker.js';
import { jobKindsOf } from '../../src/subscribers/job-kinds.js';

/*
 * A CSV import captures its rows several to a transaction, in waves of rows that share no person and no existing
 * lead (src/commands/leads/import-waves.ts). Property: whatever the rows (the same person again, by phone, by email,
 * or one row naming two people's phone and email) and however many rows go to a transaction, the leads, their events
 * and each row's outcome are those of the same file imported one row at a time.
 */

const PEOPLE = 4;

/** A row: whose phone, whose email (either may be left out, not both), and a note. */
interface Row {
  phoneOf: number | null;
  emailOf: number | null;
  name: string;
  note: string;
}

const rowArb: fc.Arbitrary<Row> = fc
  .record({
    phoneOf: fc.option(fc.integer({ min: 0, max: PEOPLE - 1 }), { nil: null }),
    emailOf: fc.option(fc.integer({ min: 0, max: PEOPLE - 1 }), { nil: null }),
    name: fc.constantFrom('Asha Rao', 'Gurpreet Sandhu', 'Ravi Kumar'),
    note: fc.constantFrom('', 'call back', 'wants Canada'),
  })
  .filter((r) => r.phoneOf !== null || r.emailOf !== null);

/** The file of one run: people numbered within the run, so that runs do not meet each other's leads. */
function sheet(run: number, rows: Row[]): Buffer {
  const phone = (i: number) => `+91 98${String(run).padStart(4, '0')}${String(i).padStart(4, '0')}`;
  const email = (i: number) => `p${i}.run${run}@example.com`;
  const lines = ['Name,Phone,Email,City,Notes'];
  for (const r of rows)
    lines.push(
      [r.name, r.phoneOf === null ? '' : phone(r.phoneOf), r.emailOf === null ? '' : email(r.emailOf), 'Pune', r.note]
        .map((cell) => `"${cell}"`)
        .join(','),
    );
  return Buffer.from(lines.join('\r\n') + '\r\n');
}

/** What the import left, without ids, times and owners (an owner is picked by the new lead's id). */
async function outcome(pool: pg.Pool, tenantId: string, importPath: string) {
  const importId = importPath.split('/').at(-1)!;
  const rows = await pool.query<{ row_no: number; lead_id: string; duplicate: boolean }>(
    `SELECT row_no, lead_id, duplicate FROM lead_import_keys WHERE tenant_id = $1 AND import_id = $2 ORDER BY row_no`,
    [tenantId, importId],
  );
  const leadIds = [...new Set(rows.rows.map((r) => r.lead_id))];
  const leads = await pool.query<{ id: string; body: Record<string, unknown>; types: string[] }>(
    `SELECT l.id, l.body, array(SELECT e.type FROM events e WHERE e.stream_id = 'lead-' || l.id ORDER BY e.revision) AS types
       FROM leads l WHERE l.tenant_id = $1 AND l.id = ANY($2::uuid[])`,
    [tenantId, leadIds],
  );
  const byId = new Map(leads.rows.map((l) => [l.id, l]));
  const shown = (id: string) => {
    const { body, types } = byId.get(id)!;
    const { full_name, phone, email, city, stage, custom_fields } = body;
    return { full_name, phone, email, city, stage, custom_fields, types };
  };
  // Leads named by the first row that reached them, so the two imports' ids need not match.
  return rows.rows.map((r) => ({
    row: r.row_no,
    duplicate: r.duplicate,
    lead: rows.rows.find((first) => first.lead_id === r.lead_id)!.row_no,
    ...shown(r.lead_id),
  }));
}

async function importWith(
  t: Test,
  f: Awaited<ReturnType<typeof consoleFixture>>,
  c: ConsoleClient,
  slug: string,
  file: Buffer,
  itemsPerTransaction: number,
): Promise<string> {
  const uploaded = await uploadCsv(c, slug, file);
  if (uploaded.status !== 303) throw new Error(`upload answered ${uploaded.status}`);
  const importPath = uploaded.location!;
  await checkProposed(c, importPath);
  // Faults are logged: a wave that rolled back (its rows then done one at a time) would hide a wrong grouping.
  const faults: string[] = [];
  const log = pino(
    { level: 'error' },
    new Writable({ write: (line, _enc, done) => done(void faults.push(String(line))) }),
  );
  const worker = new JobWorker(f.app.services, jobKindsOf(f.app.services), log, {
    pollIntervalMs: 50,
    itemsPerTransaction,
  });
  worker.start();
  t.teardown(() => worker.stop());
  const started = await c.post(`${importPath}/start`, {});
  if (started.status !== 303) throw new Error(`start answered ${started.status}`);
  await importEnded(c, importPath);
  await worker.stop();
  if (faults.length > 0) throw new Error(`the worker logged faults: ${faults.join('\n')}`);
  return importPath;
}

t.test('seeded: rows imported in waves end as when imported one at a time', async (t) => {
  const f = await consoleFixture(t);
  const c = f.client();
  await c.signIn(memberOf('admin'));
  const one = f.ws.workspace;
  const waves = (await seedWorkspace(f.app, everyRole())).workspace;
  let run = 0;
  await checkProperty(
    t,
    'import waves',
    fc.asyncProperty(
      fc.array(rowArb, { minLength: 1, maxLength: 14 }),
      fc.integer({ min: 2, max: 6 }),
      async (rows, perTransaction) => {
        run += 1;
        const file = sheet(run, rows);
        const alone = await importWith(t, f, c, one.slug, file, 1);
        const batched = await importWith(t, f, c, waves.slug, file, perTransaction);
        const expected = await outcome(f.app.pool, one.id, alone);
        const actual = await outcome(f.app.pool, waves.id, batched);
        if (expected.length !== rows.length) throw new Error(`${expected.length} of ${rows.length} rows imported`);
        t.same(actual, expected, `run ${run}: ${rows.length} rows, ${perTransaction} to a transaction`);
        return JSON.stringify(actual) === JSON.stringify(expected);
      },
    ),
    12,
  );
});

t.test('a row refused in a wave (the month’s leads used up) is settled as refused; the others are made', async (t) => {
  const f = await consoleFixture(t);
  const c = f.client();
  await c.signIn(memberOf('admin'));
  const limited = (await seedWorkspace(f.app, { ...everyRole(), limits: { monthly_leads: 5 } })).workspace;
  // Eight people, the first of them twice (an enquiry takes no slot of the quota): five leads, two rows refused.
  const rows: Row[] = [0, 1, 0, 2, 3, 4, 5, 6].map((i) => ({ phoneOf: i, emailOf: i, name: 'Asha Rao', note: '' }));
  const importPath = await importWith(t, f, c, limited.slug, sheet(1, rows), 4);
  const outcomes = await f.app.pool.query<{ seq: number; outcome: string; reason: string | null }>(
    `SELECT i.seq, i.outcome, i.reason FROM job_items i JOIN lead_imports l ON l.job_id = i.job_id
      WHERE l.id = $1 ORDER BY i.seq`,
    [importPath.split('/').at(-1)],
  );
  t.same(
    outcomes.rows.map((r) => r.outcome),
    ['done', 'done', 'done', 'done', 'done', 'done', 'refused', 'refused'],
  );
  t.match(outcomes.rows[7]!.reason, /lead/i, 'the refusal says why');
  const leads = await f.app.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM leads WHERE tenant_id = $1', [
    limited.id,
  ]);
  t.equal(leads.rows[0]!.n, 5);
});
