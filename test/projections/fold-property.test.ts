import fc from 'fast-check';
import t from 'tap';
import type pg from 'pg';
import { exportLines } from '../../src/commands/export/export-log.js';
import { importExport } from '../../src/commands/export/import-log.js';
import { projections } from '../../src/projections/index.js';
import { rebuildReadModels } from '../../src/projections/rebuild.js';
import { appFixture, type AppFixture } from '../applications/support.js';
import { freshDatabase } from '../support/db.js';
import { each } from '../support/export.js';
import { checkProperty } from '../support/properties.js';

// Any sequence of commands on a few streams gives the same read-model rows, byte for byte (the lead's stored JSON
// text included), whether the rows were written live, by a rebuild (any batch size, any fold window) or by an import
// of the workspace's export into another database.

/** The folded read models, each row as its text (json kept as written, jsonb canonical), ordered by id. */
const TABLES = ['leads', 'applications', 'tasks', 'task_timers', 'invoices'] as const;

async function rowsOf(pool: pg.Pool, tenantId: string): Promise<Record<string, string[]>> {
  const result: Record<string, string[]> = {};
  for (const table of TABLES) {
    const order = table === 'task_timers' ? 'task_id' : 'id';
    result[table] = (
      await pool.query<{ row: string }>(
        `SELECT row_to_json(r)::text AS row FROM ${table} r WHERE tenant_id = $1 ORDER BY ${order}`,
        [tenantId],
      )
    ).rows.map((r) => r.row);
  }
  return result;
}

type Step =
  | { kind: 'lead'; of: number }
  | { kind: 'enquiry'; of: number }
  | { kind: 'patch'; of: number; patch: 'stage' | 'note' | 'stage-and-note' | 'owner' | 'follow-up' | 'lost' }
  | { kind: 'convert'; of: number }
  | { kind: 'module'; of: number }
  | { kind: 'task'; of: number }
  | { kind: 'task-done'; of: number }
  | { kind: 'invoice'; of: number }
  | { kind: 'payment'; of: number };

// A few streams: picks among at most three leads, so the commands pile up on the same rows.
const of = fc.nat({ max: 2 });
const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('lead' as const), of }), weight: 2 },
  fc.record({ kind: fc.constant('enquiry' as const), of }),
  {
    arbitrary: fc.record({
      kind: fc.constant('patch' as const),
      of,
      patch: fc.constantFrom(
        'stage' as const,
        'note' as const,
        'stage-and-note' as const,
        'owner' as const,
        'follow-up' as const,
        'lost' as const,
      ),
    }),
    weight: 4,
  },
  fc.record({ kind: fc.constant('convert' as const), of }),
  fc.record({ kind: fc.constant('module' as const), of }),
  fc.record({ kind: fc.constant('task' as const), of }),
  fc.record({ kind: fc.constant('task-done' as const), of }),
  fc.record({ kind: fc.constant('invoice' as const), of }),
  fc.record({ kind: fc.constant('payment' as const), of }),
);

interface Made {
  leads: { id: string; email: string }[];
  applications: string[];
  tasks: string[];
  invoices: string[];
}

let serial = 0;

/** One command through the API; a refusal is fine, a 5xx is not. */
async function run(f: AppFixture, made: Made, s: Step): Promise<number | undefined> {
  const pick = <T>(list: T[]): T | undefined => (list.length === 0 ? undefined : list[s.of % list.length]);
  const idOf = async (response: Response) => ((await response.json()) as { id: string }).id;
  switch (s.kind) {
    case 'lead': {
      if (made.leads.length >= 3) return undefined;
      const email = `fold-${process.pid}-${++serial}@example.org`;
      // Keys not in sorted order: the stored text must not depend on the order they were said in.
      const custom = { preferred_callback: 'evening', has_offer_letter: true, budget_lakhs: serial };
      const json = { full_name: `Fold ${serial}`, email, visa_type: 'student', consent: true, custom_fields: custom };
      const response = await f.app.request('/v1/leads', { method: 'POST', key: f.ws.live, json });
      if (response.status === 201) made.leads.push({ id: await idOf(response), email });
      return response.status;
    }
    case 'enquiry': {
      const lead = pick(made.leads);
      if (!lead) return undefined;
      const json = { full_name: 'Fold again', email: lead.email, consent: true, message: `again ${++serial}` };
      return (await f.app.request('/v1/leads', { method: 'POST', key: f.ws.live, json })).status;
    }
    case 'patch': {
      const lead = pick(made.leads);
      if (!lead) return undefined;
      const json = {
        stage: { stage_key: 'contacted', temperature: 'hot' },
        note: { note: `Called back (${++serial})` },
        'stage-and-note': { stage_key: 'qualified', note: `Qualified (${++serial})` },
        owner: { owner_email: 'vikram@northstar.example' },
        'follow-up': { next_follow_up_at: new Date(Date.now() + 86_400_000).toISOString() },
        lost: { stage_key: 'lost', lost_reason_key: 'not_reachable' },
      }[s.patch];
      return (await f.app.request(`/v1/leads/${lead.id}`, { method: 'PATCH', key: f.ws.live, json })).status;
    }
    case 'convert': {
      const lead = pick(made.leads);
      if (!lead) return undefined;
      const response = await f.admin(`/leads/${lead.id}/convert`, { method: 'POST' });
      if (response.status === 201) made.applications.push(await idOf(response));
      return response.status;
    }
    case 'module': {
      const id = pick(made.applications);
      if (!id) return undefined;
      return (await f.admin(`/applications/${id}/modules/sop/select`, { method: 'POST' })).status;
    }
    case 'task': {
      const lead = pick(made.leads);
      if (!lead) return undefined;
      const json = { lead_id: lead.id, title: `Follow up ${++serial}`, due_at: new Date(Date.now() + 3_600_000) };
      const response = await f.admin('/tasks', { method: 'POST', json });
      if (response.status === 201) made.tasks.push(await idOf(response));
      return response.status;
    }
    case 'task-done': {
      const id = pick(made.tasks);
      if (!id) return undefined;
      return (await f.admin(`/tasks/${id}/complete`, { method: 'POST' })).status;
    }
    case 'invoice': {
      const lead = pick(made.leads);
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
      const id = pick(made.invoices);
      if (!id) return undefined;
      const json = { amount: 10_000, currency: 'INR', method: 'cash' };
      return (await f.admin(`/invoices/${id}/payments`, { method: 'POST', json })).status;
    }
  }
}

t.test('commands on a few streams: live, rebuilt and imported read models are byte-identical', async (t) => {
  t.setTimeout(900_000);
  const f = await appFixture(t);
  const tenant = f.ws.workspace.id;
  const made: Made = { leads: [], applications: [], tasks: [], invoices: [] };
  const done = new Map<string, number>();
  await checkProperty(
    t,
    'live = rebuilt = imported, byte for byte',
    fc.asyncProperty(
      fc.array(step, { minLength: 1, maxLength: 12 }),
      fc.integer({ min: 1, max: 12 }),
      fc.integer({ min: 0, max: 30 }),
      async (steps, batchSize, window) => {
        for (const s of steps) {
          const status = await run(f, made, s);
          if (status !== undefined && status >= 500) throw new Error(`${JSON.stringify(s)} answered ${status}`);
          if (status !== undefined && status < 300) done.set(s.kind, (done.get(s.kind) ?? 0) + 1);
        }
        const live = await rowsOf(f.app.pool, tenant);

        await rebuildReadModels(f.app.pool, projections, f.app.services.personalData, { batchSize, window });
        const rebuilt = await rowsOf(f.app.pool, tenant);
        t.same(rebuilt, live, `rebuilt (batches of ${batchSize}, window ${window}): the live rows, byte for byte`);

        let text = '';
        for await (const chunk of exportLines(f.app.pool, f.ws.workspace, null, new Date())) text += chunk;
        const target = await freshDatabase(t, undefined, 4);
        const lines = text.trimEnd().split('\n');
        // An export holds what committed before every transaction running on the server: on a server shared with
        // other work it may leave the last events for the next export, and then this run compares nothing.
        const { rows } = await f.app.pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM events WHERE tenant_id = $1',
          [tenant],
        );
        if (lines.length - 2 !== rows[0]!.n)
          throw new Error(`the export holds ${lines.length - 2} of ${rows[0]!.n} events (a transaction ran meanwhile)`);
        await importExport(
          target.pool,
          projections,
          [{ name: 'export', lines: each(lines) }],
          f.app.services.personalData,
          {
            webhookSecrets: f.app.services.secretBox.webhookSecrets,
            window,
          },
        );
        const imported = await rowsOf(target.pool, tenant);
        t.same(imported, live, `imported (window ${window}): the live rows, byte for byte`);
        return JSON.stringify(rebuilt) === JSON.stringify(live) && JSON.stringify(imported) === JSON.stringify(live);
      },
    ),
    8,
  );
  t.comment(`steps done: ${[...done].map(([kind, n]) => `${kind} ${n}`).join(', ')}`);
  t.ok(made.leads.length > 0, 'leads were made');
});
