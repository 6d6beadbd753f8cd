import fc from 'fast-check';
import t from 'tap';
import type pg from 'pg';
import { fireDueTimers } from '../../src/commands/tasks/fire-timers.js';
import { projections } from '../../src/projections/index.js';
import { rebuildReadModels, type RebuildProgress } from '../../src/projections/rebuild.js';
import { appFixture, type AppFixture } from '../applications/support.js';
import { runCli } from '../support/cli.js';
import { checkProperty } from '../support/properties.js';

// The rebuild replays the log pipelined (the next batch read ahead, the projections' writes answered a batch later):
// whatever the batch size, the rows it leaves are the ones live projection wrote, column for column.

async function snapshot(pool: pg.Pool): Promise<Record<string, unknown[]>> {
  const result: Record<string, unknown[]> = {};
  for (const table of projections.flatMap((p) => p.tables)) {
    result[table] = (await pool.query(`SELECT to_jsonb(r) AS row FROM ${table} r ORDER BY to_jsonb(r)::text`)).rows.map(
      (r: { row: unknown }) => r.row,
    );
  }
  return result;
}

/** One thing staff or an applicant does; `of` picks among the records made so far (skipped while there are none). */
type Step =
  | { kind: 'lead'; sandbox: boolean }
  | { kind: 'enquiry'; of: number }
  | { kind: 'patch'; of: number; patch: 'stage' | 'note' | 'owner' | 'lost' }
  | { kind: 'convert'; of: number }
  | { kind: 'application'; of: number; action: 'module' | 'outcome' }
  | { kind: 'task'; of: number; overdue: boolean }
  | { kind: 'task-done'; of: number }
  | { kind: 'timers' }
  | { kind: 'invoice'; of: number }
  | { kind: 'payment'; of: number }
  | { kind: 'webhook' }
  | { kind: 'webhook-delete'; of: number };

const of = fc.nat({ max: 50 });
const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('lead' as const), sandbox: fc.boolean() }), weight: 4 },
  fc.record({ kind: fc.constant('enquiry' as const), of }),
  {
    arbitrary: fc.record({
      kind: fc.constant('patch' as const),
      of,
      patch: fc.constantFrom('stage' as const, 'note' as const, 'owner' as const, 'lost' as const),
    }),
    weight: 3,
  },
  { arbitrary: fc.record({ kind: fc.constant('convert' as const), of }), weight: 2 },
  {
    arbitrary: fc.record({
      kind: fc.constant('application' as const),
      of,
      action: fc.constantFrom('module' as const, 'outcome' as const),
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ kind: fc.constant('task' as const), of, overdue: fc.boolean() }), weight: 2 },
  fc.record({ kind: fc.constant('task-done' as const), of }),
  fc.record({ kind: fc.constant('timers' as const) }),
  fc.record({ kind: fc.constant('invoice' as const), of }),
  fc.record({ kind: fc.constant('payment' as const), of }),
  fc.record({ kind: fc.constant('webhook' as const) }),
  fc.record({ kind: fc.constant('webhook-delete' as const), of }),
);

interface Made {
  leads: { id: string; key: string; email: string }[];
  applications: string[];
  tasks: string[];
  invoices: string[];
  webhooks: string[];
}

let serial = 0;

/** Runs one step through the API; a refusal (a lost lead patched, a case decided twice) is fine, a 5xx is not. */
async function run(f: AppFixture, made: Made, s: Step): Promise<number | undefined> {
  const pick = <T>(list: T[], n: number): T | undefined => (list.length === 0 ? undefined : list[n % list.length]);
  const idOf = async (response: Response) => ((await response.json()) as { id: string }).id;
  const due = (minutes: number) => new Date(Date.now() + minutes * 60_000).toISOString();
  switch (s.kind) {
    case 'lead': {
      const key = s.sandbox ? f.ws.test : f.ws.live;
      const email = `property-${process.pid}-${++serial}@example.org`;
      const response = await f.app.request('/v1/leads', {
        method: 'POST',
        key,
        json: { full_name: `Property ${serial}`, email, visa_type: 'student', consent: true },
      });
      if (response.status === 201) made.leads.push({ id: await idOf(response), key, email });
      return response.status;
    }
    case 'enquiry': {
      const lead = pick(made.leads, s.of);
      if (!lead) return undefined;
      const json = { full_name: 'Property again', email: lead.email, consent: true };
      return (await f.app.request('/v1/leads', { method: 'POST', key: lead.key, json })).status;
    }
    case 'patch': {
      const lead = pick(made.leads, s.of);
      if (!lead) return undefined;
      const json = {
        stage: { stage_key: 'contacted', temperature: 'hot' },
        note: { note: `Called back (${serial})` },
        owner: { owner_email: 'vikram@northstar.example' },
        lost: { stage_key: 'lost', lost_reason_key: 'not_reachable' },
      }[s.patch];
      return (await f.app.request(`/v1/leads/${lead.id}`, { method: 'PATCH', key: lead.key, json })).status;
    }
    case 'convert': {
      const lead = pick(made.leads, s.of);
      if (!lead) return undefined;
      const response = await f.admin(`/leads/${lead.id}/convert`, { method: 'POST', sandbox: lead.key === f.ws.test });
      if (response.status === 201 && lead.key === f.ws.live) made.applications.push(await idOf(response));
      return response.status;
    }
    case 'application': {
      const id = pick(made.applications, s.of);
      if (!id) return undefined;
      const [path, json] =
        s.action === 'module' ? ['/modules/sop/select', undefined] : ['/outcome', { outcome: 'granted' }];
      return (await f.admin(`/applications/${id}${path}`, { method: 'POST', ...(json ? { json } : {}) })).status;
    }
    case 'task': {
      const lead = made.leads.filter((l) => l.key === f.ws.live);
      const subject = s.of % 2 === 0 ? pick(lead, s.of) : undefined;
      const application = subject ? undefined : pick(made.applications, s.of);
      if (!subject && !application) return undefined;
      const json = {
        ...(subject ? { lead_id: subject.id } : { application_id: application }),
        title: `Follow up ${serial}`,
        due_at: due(s.overdue ? -5 : 60),
      };
      const response = await f.admin('/tasks', { method: 'POST', json });
      if (response.status === 201) made.tasks.push(await idOf(response));
      return response.status;
    }
    case 'task-done': {
      const id = pick(made.tasks, s.of);
      if (!id) return undefined;
      return (await f.admin(`/tasks/${id}/complete`, { method: 'POST' })).status;
    }
    case 'timers':
      await fireDueTimers(f.app.pool, f.app.services.store, f.app.services.now());
      return undefined;
    case 'invoice': {
      const lead = pick(
        made.leads.filter((l) => l.key === f.ws.live),
        s.of,
      );
      if (!lead) return undefined;
      const json = {
        lead_id: lead.id,
        currency: 'INR',
        line_items: [{ description: 'Fee', quantity: 1, unit_amount: 100_000 }],
        due_date: '2026-12-01',
      };
      const response = await f.admin('/invoices', { method: 'POST', json });
      if (response.status === 201) made.invoices.push(await idOf(response));
      return response.status;
    }
    case 'payment': {
      const id = pick(made.invoices, s.of);
      if (!id) return undefined;
      const json = { amount: 10_000, currency: 'INR', method: 'cash' };
      return (await f.admin(`/invoices/${id}/payments`, { method: 'POST', json })).status;
    }
    case 'webhook': {
      const json = { url: `https://93.184.216.34/crm/${++serial}`, events: ['lead.created', 'lead.updated'] };
      const response = await f.app.request('/v1/webhooks', { method: 'POST', key: f.ws.live, json });
      if (response.status === 201) made.webhooks.push(await idOf(response));
      return response.status;
    }
    case 'webhook-delete': {
      const id = pick(made.webhooks, s.of);
      if (!id) return undefined;
      made.webhooks = made.webhooks.filter((w) => w !== id);
      return (await f.app.request(`/v1/webhooks/${id}`, { method: 'DELETE', key: f.ws.live })).status;
    }
  }
}

t.test('a rebuild in batches of any size leaves the rows live projection wrote, for random histories', async (t) => {
  t.setTimeout(600_000);
  const f = await appFixture(t);
  const made: Made = { leads: [], applications: [], tasks: [], invoices: [], webhooks: [] };
  const done = new Map<string, number>();
  await checkProperty(
    t,
    'rebuilt rows = live rows',
    fc.asyncProperty(
      fc.array(step, { minLength: 1, maxLength: 40 }),
      fc.integer({ min: 1, max: 40 }),
      async (steps, batchSize) => {
        for (const s of steps) {
          const status = await run(f, made, s);
          if (status !== undefined && status >= 500) throw new Error(`${JSON.stringify(s)} answered ${status}`);
          if (status !== undefined && status < 300) done.set(s.kind, (done.get(s.kind) ?? 0) + 1);
        }
        const live = await snapshot(f.app.pool);
        const rebuilt = await rebuildReadModels(f.app.pool, projections, f.app.services.personalData, { batchSize });
        const after = await snapshot(f.app.pool);
        t.same(after, live, `rebuilt in batches of ${batchSize} from ${rebuilt.events} events: the live rows`);
        return JSON.stringify(after) === JSON.stringify(live);
      },
    ),
    12,
  );
  t.comment(`steps done: ${[...done].map(([kind, n]) => `${kind} ${n}`).join(', ')}`);
});

t.test('a rebuild reports its progress: the total first, then each batch, ending at the total', async (t) => {
  const f = await appFixture(t);
  for (let i = 0; i < 4; i++) await f.convert(await f.lead());
  const { rows } = await f.app.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM events');
  const total = rows[0]!.n;
  const reports: RebuildProgress[] = [];
  const batchSize = 5;
  const result = await rebuildReadModels(f.app.pool, projections, f.app.services.personalData, {
    batchSize,
    onProgress: (progress) => reports.push(progress),
  });
  t.equal(result.events, total);
  t.same(reports[0], { events: 0, total }, 'the first report: nothing done yet, of the whole log');
  t.same(reports.at(-1), { events: total, total }, 'the last: the whole log');
  t.equal(reports.length, Math.ceil(total / batchSize) + 1, 'one report per batch');
  t.ok(
    reports.every(
      (r, i) =>
        r.total === total &&
        (i === 0 || r.events - reports[i - 1]!.events === Math.min(batchSize, total - reports[i - 1]!.events)),
    ),
    'each batch moves it on by its size',
  );

  // The command prints the reports as lines on stderr, even on a pipe, and its answer alone on stdout.
  const url = (f.app.pool as unknown as { options: { connectionString: string } }).options.connectionString;
  const cli = await runCli(url, ['--json', 'read-models', 'rebuild']);
  t.equal(cli.code, 0, cli.stderr);
  t.match(JSON.parse(cli.stdout), { events: total });
  const lines = cli.stderr.trim().split('\n');
  t.match(lines[0], new RegExp(`^read-models rebuild: 0 of ${total} \\(0%\\) events$`), 'the first line: the total');
  t.match(lines.at(-1), new RegExp(`^read-models rebuild: ${total} of ${total} \\(100%\\) events$`), 'the last: done');
});
