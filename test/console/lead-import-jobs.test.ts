import t from 'tap';
import { findJob, jobProgress } from '../../src/jobs/jobs.js';
import { memberOf } from '../identity/support.js';
import { consoleFixture } from './support.js';
import { checkProposed, importEnded, startJobWorker, uploadCsv } from './import-support.js';

/** A spreadsheet of `count` people, each with a phone and an email of their own. */
function sheet(count: number, from = 0): Buffer {
  const lines = ['Name,Phone,Email,City,Notes'];
  for (let i = from; i < from + count; i += 1)
    lines.push(
      `Person ${i},+91 9${String(100_000_000 + i).slice(-9)},person${i}@example.com,"Pune, MH","row ${i}: ""quoted"""`,
    );
  return Buffer.from(lines.join('\r\n') + '\r\n');
}

async function importedLeads(pool: import('pg').Pool, tenantId: string) {
  const rows = await pool.query<{ email: string; n: number }>(
    `SELECT email, count(*)::int AS n FROM leads WHERE tenant_id = $1 AND body->'source'->>'key' = 'import'
     GROUP BY email`,
    [tenantId],
  );
  return rows.rows;
}

async function untilProgress(pool: import('pg').Pool, tenantId: string, jobId: string, done: number) {
  const until = Date.now() + 60_000;
  for (;;) {
    const progress = await jobProgress(pool, { id: jobId, tenantId, sandbox: false });
    if (progress.done >= done) return progress;
    if (Date.now() > until) throw new Error(`job ${jobId} never reached ${done} done items`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

t.test('a worker that stops mid-import (its lease lapses) is taken over; each lead is made once', async (t) => {
  const f = await consoleFixture(t);
  const c = f.client();
  await c.signIn(memberOf('manager'));
  const uploaded = await uploadCsv(c, f.ws.workspace.slug, sheet(60));
  const importPath = uploaded.location!;
  await checkProposed(c, importPath);

  // The first worker (ten rows to a transaction) hangs before its 21st row, as a process that stopped answering: its
  // lease (600 ms) lapses.
  let release!: () => void;
  const hung = new Promise<void>((resolve) => (release = resolve));
  startJobWorker(t, f.app, {
    leaseMs: 600,
    itemsPerTransaction: 10,
    beforeItem: async (_job, seq) => {
      if (seq === 21) await hung;
    },
  });
  t.equal((await c.post(`${importPath}/start`, {})).status, 303);
  const jobId = (
    await f.app.pool.query<{ job_id: string }>('SELECT job_id FROM lead_imports WHERE tenant_id = $1', [
      f.ws.workspace.id,
    ])
  ).rows[0]!.job_id;
  const halfway = await untilProgress(f.app.pool, f.ws.workspace.id, jobId, 20);
  t.equal(halfway.done, 20, 'twenty rows imported when the first worker stops');

  startJobWorker(t, f.app, { leaseMs: 600 });
  const progress = await importEnded(c, importPath);
  t.match(progress, '<h2 id="state">Finished</h2>');
  t.match(progress, '60 imported');
  // The first worker wakes up and goes on: every row it reaches is done already, so it changes nothing.
  release();
  await new Promise((r) => setTimeout(r, 500));
  const leads = await importedLeads(f.app.pool, f.ws.workspace.id);
  t.equal(leads.length, 60, 'sixty leads');
  t.ok(
    leads.every((l) => l.n === 1),
    'one lead per person',
  );
  const created = await f.app.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM events WHERE tenant_id = $1 AND type = 'lead.created'`,
    [f.ws.workspace.id],
  );
  t.equal(created.rows[0]!.n, 60, 'one lead.created event per row');
  const job = await findJob(f.app.pool, { tenantId: f.ws.workspace.id, sandbox: false }, jobId);
  t.equal(job?.state, 'done');
  t.same(await jobProgress(f.app.pool, job!), { total: 60, done: 60, refused: 0, skipped: 0, pending: 0 });
});

// The 10,000-row import runs for minutes on a busy machine: this file may take longer than the suite's default.
t.setTimeout(900_000);

t.test('10,000 rows: uploaded, checked and imported, each lead once (timings printed, busy machine)', async (t) => {
  const f = await consoleFixture(t);
  const c = f.client();
  await c.signIn(memberOf('admin'));
  const file = sheet(10_000);
  let start = performance.now();
  const uploaded = await uploadCsv(c, f.ws.workspace.slug, file);
  const uploadMs = performance.now() - start;
  t.equal(uploaded.status, 303);
  const importPath = uploaded.location!;
  start = performance.now();
  const checked = await checkProposed(c, importPath);
  const checkMs = performance.now() - start;
  t.equal(checked.status, 303);
  t.match((await c.get(importPath)).text, '10,000 rows pass the API');

  startJobWorker(t, f.app);
  start = performance.now();
  t.equal((await c.post(`${importPath}/start`, {})).status, 303);
  const progress = await importEnded(c, importPath, 600_000);
  const importMs = performance.now() - start;
  t.match(progress, '10,000 imported');
  const leads = await importedLeads(f.app.pool, f.ws.workspace.id);
  t.equal(leads.length, 10_000);
  t.ok(leads.every((l) => l.n === 1));
  const seconds = (ms: number) => (ms / 1000).toFixed(1);
  t.comment(
    `10,000 rows (${(file.length / 1024 / 1024).toFixed(2)} MB), busy machine: upload and staging ${seconds(uploadMs)} s, ` +
      `check ${seconds(checkMs)} s, import job ${seconds(importMs)} s (${Math.round(10_000 / (importMs / 1000))} rows/s)`,
  );
});
